// Where the hkv tool finds its data files at run time (the bundled traces
// and calibration figures): $HKV_DATA_DIR when set, else share/hkv beside
// the folder of the running program, as `cmake --install` lays them out
// (PREFIX/bin/hkv, PREFIX/share/hkv) and the build tree mirrors
// (build/PRESET/bin/hkv, build/PRESET/share/hkv: a link to data/). Never
// a path fixed when the tool was built.
#pragma once

#include <string>

namespace hkv::cli {

// The data folder, without a trailing '/'. The folder may not exist; the
// reader of a file in it then names the path it could not open.
std::string DataDir();

}  // namespace hkv::cli
