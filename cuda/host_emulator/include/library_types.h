// The host grid's stand-in for CUDA's library_types.h: everything is in host_grid.hpp.
#pragma once

#include "host_grid.hpp"
