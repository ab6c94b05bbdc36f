// The host grid's stand-in for CUDA's cuda_bf16.h: everything is in host_grid.hpp.
#pragma once

#include "host_grid.hpp"
