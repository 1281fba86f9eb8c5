// `hkv calibrate`: fits the deployment presets' cost models to the measured
// figures (data/calibration/), prints every figure model against measured,
// and can write the fitted coefficients back into data/deployments/.
#include <fmt/core.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "commands.h"
#include "data_dir.h"
#include "exit_status.h"
#include "hkv/calibration.h"
#include "hkv/deployment.h"

namespace hkv::cli {
namespace {

// In the data folder: the calibration file's figures and the independent
// ones that only check the fit; the deployment presets --write rewrites.
constexpr const char* kDefaultData[] = {
    "/calibration/glm53-flash.json", "/calibration/glm53-flash-held-out.json"};
constexpr const char* kDeployments = "/deployments/";

Result<std::string> Read(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Fail(ErrorCode::kIoError, "cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The figures of every file, in order.
Result<CalibrationData> ReadData(const std::vector<std::string>& paths) {
  CalibrationData all;
  for (const std::string& path : paths) {
    Result<std::string> text = Read(path);
    if (!text) return tl::unexpected(text.error());
    Result<CalibrationData> data = ParseCalibrationData(*text);
    if (!data)
      return Fail(data.error().code, path + ": " + data.error().message);
    all.figures.insert(all.figures.end(), data->figures.begin(),
                       data->figures.end());
  }
  return all;
}

const char* UseOf(const FigureResult& f) {
  return f.fitted ? "fit" : f.measured.independent ? "held" : "check";
}

std::string Percent(std::optional<double> e) {
  return e ? fmt::format("{:+.1f}%", 100.0 * *e) : std::string("-");
}

std::string Number(double v) {
  return std::abs(v) >= 1000 ? fmt::format("{:.0f}", v)
                             : fmt::format("{:.4g}", v);
}

// "compute_scale 71%": the term with most of a figure's seconds.
std::string Dominant(const FigureResult& f) {
  return f.dominant_term.empty() ? std::string("-")
                                 : fmt::format("{} {:.0f}%", f.dominant_term,
                                               100.0 * f.dominant_share);
}

void PrintTerms(const CalibrationReport& r) {
  fmt::print("{:<22}{:>8}{:>14}{:>10}{:>16}\n", "dominant term", "figures",
             "fitted |err|", "held out", "held-out |err|");
  for (const TermErrors& t : r.terms) {
    fmt::print("{:<22}{:>8}{:>13.1f}%{:>10}{:>15.1f}%\n", t.term, t.figures,
               100 * t.median_fitted_error, t.held_out,
               100 * t.median_held_out_error);
  }
}

void PrintText(const CalibrationReport& r) {
  fmt::print("{:<36}{:>10}{:>10}{:>8}{:>7}{:>10}{:>8}  {}\n", "figure",
             "measured", "model", "error", "use", "held-out", "error",
             "dominant term");
  for (const FigureResult& f : r.figures) {
    fmt::print("{:<36}{:>10}{:>10}{:>8}{:>7}{:>10}{:>8}  {}\n", f.measured.id,
               Number(f.measured.value), Number(f.model), Percent(f.error),
               UseOf(f), f.held_out_model ? Number(*f.held_out_model) : "-",
               Percent(f.held_out_error), Dominant(f));
  }
  PrintTerms(r);
  fmt::print(
      "median |error|: fitted {:.1f}%, held out {:.1f}%, held-out figures "
      "{:.1f}%\n",
      100 * r.median_fitted_error, 100 * r.median_held_out_error,
      100 * r.median_independent_error);
  for (const RankCheck& k : r.rankings) {
    fmt::print("ranking {} over {}: measured {:+.1f}%, model {:+.1f}% ({})\n",
               k.faster_measured, k.slower_measured, 100 * k.measured_gap,
               100 * k.model_gap, k.agrees ? "agrees" : "differs");
  }
  for (const DeploymentPreset& p : r.presets) {
    fmt::print("{}: {}\n", p.name, CostJson(p.cost));
  }
  fmt::print("fitted in {} round(s)\n", r.rounds);
}

nlohmann::json ReportJson(const CalibrationReport& r) {
  nlohmann::json out = {
      {"median_fitted_error", r.median_fitted_error},
      {"median_held_out_error", r.median_held_out_error},
      {"median_independent_error", r.median_independent_error},
      {"rounds", r.rounds}};
  for (const FigureResult& f : r.figures) {
    nlohmann::json j = {{"id", f.measured.id},
                        {"preset", f.measured.preset},
                        {"geometry", f.measured.geometry},
                        {"scenario", f.measured.scenario},
                        {"figure", f.measured.figure},
                        {"measured", f.measured.value},
                        {"model", f.model},
                        {"error", f.error},
                        {"fitted", f.fitted},
                        {"independent", f.measured.independent}};
    if (f.held_out_model) j["held_out_model"] = *f.held_out_model;
    if (f.held_out_error) j["held_out_error"] = *f.held_out_error;
    if (!f.dominant_term.empty()) {
      j["dominant_term"] = f.dominant_term;
      j["dominant_share"] = f.dominant_share;
    }
    if (f.measured.scenario.empty()) {
      j["measured_concurrency"] = f.measured.concurrency;
      j["model_concurrency"] = f.model_concurrency;
    }
    out["figures"].push_back(j);
  }
  for (const RankCheck& k : r.rankings) {
    out["rankings"].push_back({{"faster", k.faster_measured},
                               {"slower", k.slower_measured},
                               {"measured_gap", k.measured_gap},
                               {"model_gap", k.model_gap},
                               {"agrees", k.agrees}});
  }
  for (const TermErrors& t : r.terms) {
    out["terms"].push_back(
        {{"term", t.term},
         {"figures", t.figures},
         {"median_fitted_error", t.median_fitted_error},
         {"held_out", t.held_out},
         {"median_held_out_error", t.median_held_out_error}});
  }
  for (const DeploymentPreset& p : r.presets) {
    out["presets"][p.name] = nlohmann::json::parse(CostJson(p.cost));
  }
  return out;
}

Result<void> WritePresets(const CalibrationReport& r) {
  for (const DeploymentPreset& p : r.presets) {
    const std::string path = DataDir() + kDeployments + p.name + ".json";
    Result<std::string> text = Read(path);
    if (!text) return tl::unexpected(text.error());
    Result<std::string> fitted = WithCost(*text, p.cost);
    if (!fitted) return tl::unexpected(fitted.error());
    std::ofstream out(path);
    if (!(out << *fitted))
      return Fail(ErrorCode::kIoError, "cannot write " + path);
    fmt::print(stderr, "wrote {}\n", path);
  }
  return {};
}

// An unknown preset is a usage error (exit code 2), reported by CLI11.
const CLI::Validator kPresetValidator(
    [](std::string& name) {
      Result<DeploymentPreset> preset = LoadDeploymentPreset(name);
      return preset ? std::string() : preset.error().message;
    },
    "");

}  // namespace

constexpr char kCalibrateExamples[] = R"(Examples:
  hkv calibrate
      fit every preset; each figure model against measured, held-out ones too
  hkv calibrate --preset glm53-flash-gb10x4 --json
      one preset (and those it depends on), as JSON
  hkv calibrate --data my-figures.json --write
      fit to other measured figures and store the coefficients)";

void RegisterCalibrate(CLI::App& app) {
  auto options = std::make_shared<CalibrateCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Fit the deployment presets' cost models to the measured figures and "
      "print each figure model against measured (docs/calibration.md)");
  sub->footer(kCalibrateExamples);
  sub->add_option("--preset", options->presets,
                  "Preset to fit (repeat; default: every preset with figures)")
      ->check(kPresetValidator);
  sub->add_option("--data", options->data,
                  "Calibration data file (repeat; default: the bundled "
                  "figures and the held-out ones)");
  sub->add_flag("--write", options->write,
                "Write the fitted coefficients into data/deployments/");
  sub->add_flag("--json", options->json, "Print JSON");
  sub->callback([options] {
    if (const int code = RunCalibrate(*options); code != 0) {
      throw CLI::RuntimeError(code);
    }
  });
}

int RunCalibrate(const CalibrateCommandOptions& options) {
  std::vector<std::string> paths = options.data;
  if (paths.empty()) {
    for (const char* file : kDefaultData) paths.push_back(DataDir() + file);
  }
  Result<CalibrationData> data = ReadData(paths);
  Result<CalibrationReport> report =
      data ? Calibrate(*data, {.presets = options.presets})
           : Result<CalibrationReport>(tl::unexpected(data.error()));
  if (report && options.write) {
    if (Result<void> ok = WritePresets(*report); !ok) {
      report = tl::unexpected(ok.error());
    }
  }
  if (!report) {
    // The presets named are known (kPresetValidator): what fails now is the
    // data's (a file, its figures) or the fit's, whatever the class.
    fmt::print(stderr, "hkv calibrate: {}\n", report.error().message);
    return kExitFailure;
  }
  if (options.json) {
    fmt::print("{}\n", ReportJson(*report).dump(2));
  } else {
    PrintText(*report);
  }
  return 0;
}

}  // namespace hkv::cli
