// The host grid's stand-in for CUDA's cuda_runtime_api.h: everything is in host_grid.hpp.
#pragma once

#include "host_grid.hpp"
