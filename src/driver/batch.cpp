//===- batch.cpp - aotc batch: a model zoo in one run ---------------------===//
//
// Note [Batch compiles]: `aotc batch` is the nightly CI job over a model zoo.
//  - Models are given as files, directories (every .onnx, and every .json
//    that is an aotc FX graph, recursively, sorted) and @LIST files (one
//    path per line, '#' comments); each model once, in the order given.
//  - Each model's artifact is OUT/<name>, the name its file stem; models
//    whose stems collide are told apart by their parent directories
//    (a-model, b-model), decided over the whole list so that a model's
//    artifact has the same name in every shard.
//  - --shard I/N takes the models at positions I-1, I-1+N, ... of that list:
//    deterministic, the shards together are the list, no model in two.
//  - Models compile in parallel on -j threads (each compile gets a share of
//    them for NVRTC when there are fewer models than threads) into one
//    shared kernel cache (writes are atomic and per thread, Note [No
//    debris]); a failure is recorded and the batch goes on; an internal
//    error in one model is recorded as such and does not stop the others.
//  - Lines per model come out in list order as soon as the models before
//    them are done, so a log is the same whatever the scheduling; on a
//    terminal a progress line (counts, failures, the models compiling, an
//    ETA) stays below them.  (No C++ progress-bar library is packaged in
//    Debian; the line is a few ANSI escapes.)
//  - The JSON report (schemas/batch_report.schema.json) and the JUnit XML
//    (one test case per model, written with Boost.PropertyTree) are written
//    atomically.  Exit status: 0 all compiled, 1 some model was refused,
//    3 some model hit an internal error.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "aotc/driver/driver.h"
#include "aotc/support/diag.h"

namespace fs = std::filesystem;

namespace aotc {

namespace {

using ojson = nlohmann::ordered_json;

/// Whether `p` is an aotc FX graph (its opening names the format).
bool isFxGraph(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::string head(4096, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(f.gcount()));
  return head.find("\"aotc.fx_graph\"") != std::string::npos;
}

void addDirectory(const fs::path& dir, std::vector<std::string>& out) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const fs::path& p = it->path();
    if (p.extension() == ".onnx" || p.extension() == ".pt2" || (p.extension() == ".json" && isFxGraph(p))) found.push_back(p.lexically_normal().string());
  }
  if (ec) throw UserError(SourceLoc{dir.string(), "", ""}, "cannot list directory: " + ec.message());
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
}

std::string fmtMs(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", ms / 1000.0);
  return b;
}

std::string bytesText(uint64_t b) {
  char s[32];
  if (b >= (uint64_t{1} << 20)) std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else std::snprintf(s, sizeof s, "%.1f KiB", static_cast<double>(b) / 1024);
  return s;
}

uint64_t treeBytes(const fs::path& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  return n;
}

/// Writes `text` to `path` atomically (a temporary beside it, renamed).
void writeAtomically(const std::string& path, const std::string& text) {
  fs::path p(path), tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw UserError(SourceLoc{path, "", ""}, "cannot write file");
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UserError(SourceLoc{path, "", ""}, "cannot write file");
  }
}

enum class Status { Pending, Running, Ok, Refused, Internal };

struct Row {
  std::string model, name;
  Status status = Status::Pending;
  std::vector<std::string> errors;
  CompileSummary summary;
  double wall_ms = 0;
  uint64_t artifact_bytes = 0;
};

const char* statusName(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::Refused: return "error";
    case Status::Internal: return "internal_error";
    default: return "not_run";
  }
}

}  // namespace

std::vector<std::string> expandModels(const std::vector<std::string>& specs) {
  std::vector<std::string> all;
  for (const std::string& spec : specs) {
    if (!spec.empty() && spec[0] == '@') {
      const std::string list = spec.substr(1);
      std::ifstream f(list);
      if (!f) throw UserError(SourceLoc{list, "", ""}, "cannot read the model list");
      std::string line;
      for (size_t n = 1; std::getline(f, line); ++n) {
        const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#') continue;
        const std::string p = line.substr(b, e - b + 1);
        if (p[0] == '@') throw UserError(SourceLoc{list, cat("line ", n), ""}, "a model list cannot name another list");
        if (fs::is_directory(p)) addDirectory(p, all);
        else all.push_back(fs::path(p).lexically_normal().string());
      }
    } else if (fs::is_directory(spec)) {
      addDirectory(spec, all);
    } else {
      all.push_back(fs::path(spec).lexically_normal().string());
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::string& m : all)
    if (seen.insert(m).second) out.push_back(std::move(m));
  return out;
}

std::vector<std::string> artifactNames(const std::vector<std::string>& models) {
  // Each model's name: its stem, preceded by as many parent directories as
  // tell it from the models that share the stem; the extension as a last resort.
  auto nameAt = [](const std::string& m, size_t parents, bool ext) {
    fs::path p(m);
    std::string n = p.stem().string() + (ext ? "-" + p.extension().string().substr(std::min<size_t>(1, p.extension().string().size())) : "");
    fs::path d = p.parent_path();
    for (size_t i = 0; i < parents && !d.empty() && d.filename() != ".." && d.filename() != "."; ++i, d = d.parent_path())
      n = d.filename().string() + "-" + n;
    return n;
  };
  std::vector<std::string> names(models.size());
  std::map<std::string, std::vector<size_t>> byStem;
  for (size_t i = 0; i < models.size(); ++i) byStem[fs::path(models[i]).stem().string()].push_back(i);
  for (auto& [stem, idx] : byStem) {
    if (idx.size() == 1) {
      names[idx[0]] = stem;
      continue;
    }
    for (size_t depth = 1;; ++depth) {
      std::set<std::string> ns;
      bool ext = depth > 64;
      for (size_t i : idx) ns.insert(nameAt(models[i], depth, ext));
      if (ns.size() == idx.size() || ext) {
        for (size_t i : idx) names[i] = nameAt(models[i], depth, ext);
        break;
      }
    }
  }
  return names;
}

int batchCompile(const BatchOptions& bo, const Logger& log) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsedMs = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
  const std::vector<std::string> all = expandModels(bo.models);
  if (all.empty()) throw UserError(SourceLoc{}, "no models to compile (a directory holds .onnx files and aotc FX graphs)");
  const std::vector<std::string> allNames = artifactNames(all);
  std::vector<Row> rows;
  for (size_t i = bo.shard_index - 1; i < all.size(); i += bo.shard_count) {
    Row r;
    r.model = all[i];
    r.name = allNames[i];
    rows.push_back(std::move(r));
  }

  const unsigned threads = bo.jobs ? bo.jobs : std::max(1u, std::thread::hardware_concurrency());
  // --print-ir-after prints to stderr: one model at a time keeps the dumps apart.
  const unsigned workers = bo.base.print_ir_after.empty() ? std::min<unsigned>(threads, static_cast<unsigned>(rows.size())) : 1;
  const unsigned perCompile = std::max(1u, threads / std::max(1u, workers));
  const bool bar = bo.progress && !rows.empty();

  std::mutex mu;
  std::condition_variable cv;
  size_t printed = 0, done = 0, failed = 0;
  std::string barText;
  auto clearBar = [&] {
    if (bar && !barText.empty()) std::fprintf(stderr, "\r\033[K");
  };
  auto drawBar = [&] {
    if (!bar) return;
    std::string running;
    for (const Row& r : rows)
      if (r.status == Status::Running) running += (running.empty() ? "" : ", ") + r.name;
    const double ms = elapsedMs();
    std::string eta = "--:--";
    if (done > 0 && done < rows.size()) {
      const long s = std::lround(ms / 1000.0 / static_cast<double>(done) * static_cast<double>(rows.size() - done));
      char b[32];
      std::snprintf(b, sizeof b, "%ld:%02ld", s / 60, s % 60);
      eta = b;
    }
    constexpr int kWidth = 24;
    const int fill = static_cast<int>(kWidth * done / rows.size());
    char head[160];
    std::snprintf(head, sizeof head, "[%s%s] %zu/%zu%s  ETA %s  ", std::string(static_cast<size_t>(fill), '#').c_str(),
                  std::string(static_cast<size_t>(kWidth - fill), '.').c_str(), done, rows.size(),
                  failed ? cat(" (", failed, " failed)").c_str() : "", eta.c_str());
    barText = std::string(head) + running;
    if (barText.size() > 150) barText = barText.substr(0, 147) + "...";
    std::fprintf(stderr, "\r\033[K%s", barText.c_str());
    std::fflush(stderr);
  };
  // Lines in list order, each once every model before it is done.
  auto flushLines = [&] {
    while (printed < rows.size() && rows[printed].status != Status::Pending && rows[printed].status != Status::Running) {
      const Row& r = rows[printed++];
      if (bo.quiet && r.status == Status::Ok) continue;
      clearBar();
      if (r.status == Status::Ok) {
        std::printf("ok     %s -> %s (%zu kernels, %.0f ms)\n", r.model.c_str(), (fs::path(bo.out_root) / r.name).string().c_str(),
                    r.summary.kernels, r.wall_ms);
        if (bo.timings) std::printf("       %s", r.summary.timings().c_str());
      } else {
        std::printf("%s %s: %s\n", r.status == Status::Internal ? "crash " : "error ", r.model.c_str(), r.errors.front().c_str());
        for (size_t k = 1; k < r.errors.size(); ++k) std::printf("       %s\n", r.errors[k].c_str());
      }
      std::fflush(stdout);
    }
    drawBar();
  };

  {
    std::unique_lock lock(mu);
    drawBar();
  }
  {
    boost::asio::thread_pool pool(std::max(1u, workers));
    for (size_t i = 0; i < rows.size(); ++i)
      boost::asio::post(pool, [&, i] {
        Row& r = rows[i];
        {
          std::lock_guard lock(mu);
          r.status = Status::Running;
        }
        CompileOptions o = bo.base;
        o.model = r.model;
        o.jobs = perCompile;
        o.out_dir = (fs::path(bo.out_root) / r.name).string();
        if (!bo.base.dump_dir.empty()) o.dump_dir = (fs::path(bo.base.dump_dir) / r.name).string();
        const auto s0 = std::chrono::steady_clock::now();
        Status st = Status::Ok;
        std::vector<std::string> errors;
        CompileSummary sum;
        uint64_t bytes = 0;
        try {
          sum = compileModel(o, log);
          bytes = treeBytes(o.out_dir);
        } catch (const UserError& e) {
          st = Status::Refused;
          for (const Diagnostic& d : e.diagnostics()) errors.push_back(d.str());
        } catch (const std::exception& e) {
          st = Status::Internal;
          errors.push_back(r.model + ": internal error (a bug in aotc): " + e.what());
        }
        const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count();
        std::lock_guard lock(mu);
        r.status = st;
        r.errors = std::move(errors);
        r.summary = std::move(sum);
        r.wall_ms = wall;
        r.artifact_bytes = bytes;
        ++done;
        failed += st != Status::Ok;
        flushLines();
        cv.notify_all();
      });
    // The progress line's ETA and clock move while models compile.
    std::unique_lock lock(mu);
    while (done < rows.size()) {
      cv.wait_for(lock, std::chrono::milliseconds(bar ? 250 : 1000));
      drawBar();
    }
    clearBar();
    barText.clear();
    lock.unlock();
    pool.join();
  }
  const double wallMs = elapsedMs();
  size_t refused = 0, internal = 0;
  for (const Row& r : rows) {
    refused += r.status == Status::Refused;
    internal += r.status == Status::Internal;
  }

  if (!bo.quiet) {
    size_t w = 5;
    for (const Row& r : rows) w = std::max(w, r.name.size());
    std::printf("\n%-*s  %-14s %7s %13s %8s %10s\n", static_cast<int>(w), "model", "status", "kernels", "cache hit/miss", "time s",
                "artifact");
    for (const Row& r : rows) {
      if (r.status == Status::Ok)
        std::printf("%-*s  %-14s %7zu %6zu/%-6zu %8s %10s\n", static_cast<int>(w), r.name.c_str(), "ok", r.summary.kernels,
                    r.summary.cache_hits, r.summary.cache_misses, fmtMs(r.wall_ms).c_str(), bytesText(r.artifact_bytes).c_str());
      else
        std::printf("%-*s  %-14s %7s %13s %8s %10s\n", static_cast<int>(w), r.name.c_str(), statusName(r.status), "-", "-",
                    fmtMs(r.wall_ms).c_str(), "-");
    }
    std::printf("%zu models%s: %zu compiled, %zu refused, %zu internal errors; %.1f s on %u threads\n", rows.size(),
                bo.shard_count > 1 ? cat(" (shard ", bo.shard_index, "/", bo.shard_count, " of ", all.size(), ")").c_str() : "",
                rows.size() - refused - internal, refused, internal, wallMs / 1000.0, threads);
    std::fflush(stdout);
  }

  auto round1 = [](double x) { return std::round(x * 10) / 10; };
  if (!bo.report.empty()) {
    ojson models = ojson::array();
    for (const Row& r : rows) {
      ojson m{{"model", r.model}, {"artifact", (fs::path(bo.out_root) / r.name).string()}, {"status", statusName(r.status)},
              {"wall_ms", round1(r.wall_ms)}};
      if (r.status == Status::Ok) {
        const CompileSummary& s = r.summary;
        m["stages_ms"] = {{"load", round1(s.load_ms)},     {"engine", round1(s.engine_ms)}, {"codegen", round1(s.codegen_ms)},
                          {"nvrtc", round1(s.nvrtc_wall_ms)}, {"write", round1(s.write_ms)},   {"total", round1(s.total_ms)}};
        m["kernels"] = s.kernels;
        m["cache_hits"] = s.cache_hits;
        m["cache_misses"] = s.cache_misses;
        m["module_cache_hits"] = s.module_hits;
        m["module_cache_misses"] = s.module_misses;
        m["artifact_bytes"] = r.artifact_bytes;
        m["saved_bytes"] = s.saved_bytes;
      } else {
        m["errors"] = r.errors;
      }
      models.push_back(std::move(m));
    }
    ojson rep{{"format", "aotc.batch_report"},
              {"version", 2},
              {"shard", {{"index", bo.shard_index}, {"count", bo.shard_count}, {"models_in_all_shards", all.size()}}},
              {"threads", threads},
              {"wall_ms", round1(wallMs)},
              {"models", models},
              {"failed", refused + internal}};
    writeAtomically(bo.report, rep.dump(1) + "\n");
  }
  if (!bo.junit.empty()) {
    namespace pt = boost::property_tree;
    pt::ptree suite;
    suite.put("<xmlattr>.name", "aotc batch");
    suite.put("<xmlattr>.tests", rows.size());
    suite.put("<xmlattr>.failures", refused);
    suite.put("<xmlattr>.errors", internal);
    suite.put("<xmlattr>.time", fmtMs(wallMs));
    for (const Row& r : rows) {
      pt::ptree tc;
      tc.put("<xmlattr>.classname", "aotc.batch");
      tc.put("<xmlattr>.name", r.model);
      tc.put("<xmlattr>.time", fmtMs(r.wall_ms));
      if (r.status != Status::Ok) {
        std::string all;
        for (const std::string& e : r.errors) all += e + "\n";
        pt::ptree f;
        f.put_value(all);
        f.put("<xmlattr>.message", r.errors.front());
        f.put("<xmlattr>.type", r.status == Status::Internal ? "InternalError" : "UserError");
        tc.add_child(r.status == Status::Internal ? "error" : "failure", f);
      } else {
        tc.put("system-out", r.summary.str());
      }
      suite.add_child("testcase", tc);
    }
    pt::ptree doc;
    doc.add_child("testsuites.testsuite", suite);
    std::ostringstream os;
    pt::write_xml(os, doc, pt::xml_writer_make_settings<std::string>(' ', 1));
    writeAtomically(bo.junit, os.str());
  }
  log->info("{} of {} models compiled", rows.size() - refused - internal, rows.size());
  return internal ? 3 : refused ? 1 : 0;
}

}  // namespace aotc
