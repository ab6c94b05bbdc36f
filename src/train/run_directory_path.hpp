// Whether a run can be written at the path output.directory names, checked by the start before
// the data is read (RunDirectory::check) and again when the directory is claimed: a start that
// cannot write there fails at once, before anything is made.
#pragma once

#include <string>

namespace dl {

// Refuses, with an IoError naming the part of the path at fault and the fix: a path whose longest
// output (`longest`, relative to it) would pass PATH_MAX or one of whose names passes NAME_MAX;
// an output directory that is a file, a part of the path that is a file or a symbolic link to
// nothing; a directory, or the nearest folder above it, that this process may not write.
void check_output_path(const std::string& path, const std::string& longest);

}  // namespace dl
