// switchyard — command-line front end. Argument parsing and printing only; the work lives in
// the library.
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "require.h"
#include "switchyard/error.hpp"
#include "switchyard/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"switchyard: load, place, compile and run neural-network models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("switchyard ") + switchyard::version(),
                       "Print the library's version and exit");
  int exit_code = 0;
  switchyard::tools::add_run_command(app, exit_code);
  switchyard::tools::add_bench_command(app, exit_code);
  switchyard::tools::add_info_command(app, exit_code);
  switchyard::tools::add_explain_command(app, exit_code);
  switchyard::tools::add_compile_command(app, exit_code);
  switchyard::tools::add_devices_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; any other parse error is a usage error.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const switchyard::tools::UsageError& e) {
    std::fprintf(stderr, "switchyard: error: %s\n", e.what());
    return 2;
  } catch (const switchyard::Error& e) {
    std::fprintf(stderr, "switchyard: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "switchyard: error: OutOfMemory: the machine ran out of memory\n");
    return 1;
  } catch (const std::length_error& e) {
    std::fprintf(stderr, "switchyard: error: InvalidModel: a size is too large (%s)\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "switchyard: internal error: %s\n", e.what());
    return 3;
  }
  return exit_code;
}
