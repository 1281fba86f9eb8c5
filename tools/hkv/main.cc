// hkv: command-line front end of the KV-cache manager.
//
// Exit codes (exit_status.h): 0 ok, 1 the command failed, 2 usage error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "commands.h"
#include "exit_status.h"
#include "hkv/version.h"

namespace {

constexpr char kExamples[] = R"(Examples:
  hkv compare
      which page geometry to run: the measured GB10 deployment's A/B
  hkv plan --model glm53-flash-like --tp 4 --budget 33GiB --context 262144 \
      --geometry 2048/256/256
      how many tokens and requests the KV cache holds
  hkv COMMAND --help
      a command's options and examples)";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hkv: a KV-cache manager for LLM serving"};
  app.set_version_flag("--version", "hkv " + std::string(hkv::kVersion));
  app.footer(std::string(kExamples) + "\n\n" + hkv::cli::kExitStatusHelp);
  app.require_subcommand(1);
  hkv::cli::RegisterReplay(app);
  hkv::cli::RegisterPlan(app);
  hkv::cli::RegisterSimulate(app);
  hkv::cli::RegisterCompare(app);
  hkv::cli::RegisterKeys(app);
  hkv::cli::RegisterCalibrate(app);
  hkv::cli::RegisterIndex(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {  // a command failed; it said why
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {  // usage error, or --help
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::bad_alloc&) {
    // A last resort: inputs are checked against the documented limits
    // before anything is allocated for them, so this is the machine's limit.
    std::fputs("hkv: out of memory\n", stderr);
    return 1;
  } catch (const std::exception& e) {  // a last resort, not a check
    std::fprintf(stderr, "hkv: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
