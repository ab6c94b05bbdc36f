#pragma once
// Catch2's session, run from a test program's main. Catch2's implementation is compiled once, in
// catch_session.cpp; the single header declares its Session only in that implementation part, so
// the mains reach it through this function.

namespace dl::testing {

struct CatchSessionResult {
  int status = 0;          // what main returns: a command-line error's code, else the failed count
  bool ran_cases = false;  // false when the command line was refused or only listed tests or tags
  bool filtered = false;   // the command line selected test cases by name or tag
};

CatchSessionResult run_catch_session(int argc, char* argv[]);

}  // namespace dl::testing
