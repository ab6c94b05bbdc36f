// The main of every Catch2 test program but cuda_kernels_on_host (host_grid_main.cpp).
#include "catch_session.hpp"

int main(int argc, char* argv[]) {
  return dl::testing::run_catch_session(argc, argv).status;
}
