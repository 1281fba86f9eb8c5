// hkv: command-line front end of the KV-cache manager.
//
// Exit codes: 0 ok, 1 the command failed, 2 usage error.
#include <CLI/CLI.hpp>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"hkv: a KV-cache manager for LLM serving"};
  app.require_subcommand(1);
  hkv::cli::RegisterReplay(app);
  hkv::cli::RegisterPlan(app);
  hkv::cli::RegisterSimulate(app);
  hkv::cli::RegisterCompare(app);
  hkv::cli::RegisterKeys(app);
  hkv::cli::RegisterCalibrate(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {  // a command failed; it said why
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {  // usage error, or --help
    return app.exit(e) == 0 ? 0 : 2;
  }
  return 0;
}
