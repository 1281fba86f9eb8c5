#include "data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace hkv::cli {

std::string DataDir() {
  if (const char* dir = std::getenv("HKV_DATA_DIR"); dir && *dir) return dir;
  std::error_code error;
  const std::filesystem::path program =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "share/hkv";  // relative to the working directory
  return (program.parent_path().parent_path() / "share" / "hkv").string();
}

}  // namespace hkv::cli
