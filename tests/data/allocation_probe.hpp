// Records the largest single allocation made through operator new, so that a test can check
// that a reader refuses an absurd header before allocating for it; and the bytes held through
// operator new at the most, so that a test can bound what a reader keeps besides its data.
#pragma once

#include <cstddef>

namespace dl::test {

void reset_largest_allocation();
std::size_t largest_allocation();

// The bytes allocated through operator new and not yet freed, and their peak since
// reset_peak_live_bytes (which sets it to the bytes held now).
std::size_t live_bytes();
void reset_peak_live_bytes();
std::size_t peak_live_bytes();

}  // namespace dl::test
