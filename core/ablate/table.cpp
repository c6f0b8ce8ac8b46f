#include "ablate/table.hpp"

#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

namespace moepage::ablate {
namespace {

using nlohmann::json;

std::string percent(const Summary& s) {
  Summary p = s;
  p.mean *= 100.0;
  p.sd *= 100.0;
  return s.n ? format_summary(p, 1) + "%" : "n/a";
}

std::string ids_cell(const ArmRow& row, bool first) {
  if (first) return "true (reference)";
  if (!row.ids_match_arm0) return "n/a";
  return *row.ids_match_arm0 ? "true" : "FALSE";
}

std::string csv_escape(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string number(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

json summary_json(const Summary& s) {
  if (s.n == 0) return json{{"n", 0}};
  return json{{"mean", s.mean}, {"sd", s.sd}, {"n", s.n}};
}

}  // namespace

std::vector<ArmRow> summarize_arms(const std::vector<ArmInfo>& arms, const std::vector<std::vector<ArmRun>>& runs,
                                   const std::vector<std::vector<int32_t>>& reference) {
  std::vector<ArmRow> rows;
  for (size_t a = 0; a < arms.size(); ++a) {
    ArmRow row;
    row.info = arms[a];
    const std::vector<ArmRun>& mine = a < runs.size() ? runs[a] : std::vector<ArmRun>{};
    row.runs = uint32_t(mine.size());
    std::vector<std::optional<double>> prefill, decode, total, io, routed, rest, hit, bytes, used, wasted, load, peak;
    for (const ArmRun& r : mine) {
      const Measurement& m = r.m;
      prefill.push_back(m.prefill_tok_s());
      decode.push_back(m.decode_tok_s());
      const uint32_t tokens = m.prompt_tokens + m.generated;
      const std::optional<double> total_ms =
          tokens ? std::optional<double>((m.prefill_seconds + m.decode_seconds) * 1000.0 / tokens) : std::nullopt;
      total.push_back(total_ms);
      const std::optional<double> io_ms = m.expert_io_ms_per_token();
      std::optional<double> routed_ms;
      if (m.routed_compute_seconds && tokens) routed_ms = *m.routed_compute_seconds * 1000.0 / tokens;
      io.push_back(io_ms);
      routed.push_back(routed_ms);
      rest.push_back(total_ms ? std::optional<double>(*total_ms - io_ms.value_or(0.0) - routed_ms.value_or(0.0))
                              : std::nullopt);
      hit.push_back(m.hit_rate());
      bytes.push_back(m.bytes_per_token());
      used.push_back(m.pager ? std::optional<double>(double(m.pager->prefetch_used)) : std::nullopt);
      wasted.push_back(m.pager ? std::optional<double>(double(m.pager->prefetch_wasted)) : std::nullopt);
      load.push_back(m.load_seconds);
      row.load_is_estimate = row.load_is_estimate || m.load_is_estimate;
      peak.push_back(double(m.peak_rss_bytes) / (1024.0 * 1024.0));
      if (r.prompt < reference.size() && !reference[r.prompt].empty()) {
        const bool same = m.ids == reference[r.prompt];
        row.ids_match_arm0 = row.ids_match_arm0.value_or(true) && same;
      }
    }
    row.prefill_tok_s = summarize(prefill);
    row.decode_tok_s = summarize(decode);
    row.ms_per_token = summarize(total);
    row.expert_io_ms = summarize(io);
    row.routed_ms = summarize(routed);
    row.rest_ms = summarize(rest);
    row.hit_rate = summarize(hit);
    row.bytes_per_token = summarize(bytes);
    row.prefetch_used = summarize(used);
    row.prefetch_wasted = summarize(wasted);
    row.load_seconds = summarize(load);
    row.peak_mib = summarize(peak);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string table_markdown(const TableContext& ctx, const std::vector<ArmRow>& rows) {
  std::ostringstream out;
  out << "# moepage ablation\n\n"
      << "- spec: `" << ctx.spec << "`\n"
      << "- model: `" << ctx.model << "`\n"
      << "- machine: " << ctx.machine << "\n"
      << "- date: " << ctx.date << "\n"
      << "- command: `" << ctx.command << "`\n"
      << "- " << ctx.repetitions << " repetitions x " << ctx.prompts << " prompt(s), " << ctx.max_tokens
      << " tokens each, order " << ctx.order << ", warm-up " << ctx.warmup_tokens << " tokens per arm\n"
      << "- arms reloaded per repetition: " << (ctx.reloaded_per_repetition ? "yes" : "no")
      << (ctx.reloaded_per_repetition ? " (every run is a fresh `moepage run` process: load, prefill, decode)" : "")
      << "\n";
  if (!ctx.pager_stats_available)
    out << "- pager statistics: not available (this `moepage run` has no --stats-json), so hit rate, bytes, "
           "expert I/O and prefetch columns are n/a\n";
  out << "- ms/token = (prefill + decode time) / all tokens, split into expert I/O (the pager's read + wait time), "
         "routed compute (the architecture's wall time in the routed experts' MLPs, waits for their bytes excluded; "
         "n/a where the architecture cannot time it, e.g. asynchronous GPU kernels) and the rest; bytes/token excludes "
         "what the pager read at load\n"
      << "- load s = wall time `moepage run` spends creating the architecture, transport and pager and binding "
         "them (measured by the run; a resident pager reads every expert here); peak MiB = the run's peak "
         "resident memory\n\n";
  out << "| arm | pager | transport | budget | prefill tok/s | decode tok/s | ms/token | expert I/O ms | routed ms | "
         "rest ms | "
         "hit rate | bytes/token | prefetch used / wasted | load s | peak MiB | ids==arm0 |\n"
      << "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const ArmRow& r = rows[i];
    const std::string n = " (n=" + std::to_string(r.decode_tok_s.n) + ")";
    out << "| " << r.info.name << " | " << r.info.series << " | " << r.info.transport << " | "
        << (r.info.budget_text.empty() ? "-" : r.info.budget_text) << " | " << format_summary(r.prefill_tok_s, 1)
        << " | " << format_summary(r.decode_tok_s, 2) << n << " | " << format_summary(r.ms_per_token, 1) << " | "
        << format_summary(r.expert_io_ms, 2) << " | " << format_summary(r.routed_ms, 2) << " | "
        << format_summary(r.rest_ms, 1) << " | " << percent(r.hit_rate) << " | " << format_summary(r.bytes_per_token, 0)
        << " | " << format_summary(r.prefetch_used, 0) << " / " << format_summary(r.prefetch_wasted, 0) << " | "
        << format_summary(r.load_seconds, 2) << (r.load_is_estimate && r.load_seconds.n ? "*" : "") << " | "
        << format_summary(r.peak_mib, 0) << " | " << ids_cell(r, i == 0) << " |\n";
  }
  bool estimated = false;
  for (const ArmRow& r : rows) estimated = estimated || (r.load_is_estimate && r.load_seconds.n);
  if (estimated) out << "\n\\* load time estimated as process wall time minus prefill and decode time.\n";
  return out.str();
}

std::string table_csv(const std::vector<ArmRow>& rows) {
  std::ostringstream out;
  const char* metrics[] = {"prefill_tok_s", "decode_tok_s",    "ms_per_token", "expert_io_ms",
                           "routed_ms",     "rest_ms",         "hit_rate",     "bytes_per_token",
                           "prefetch_used", "prefetch_wasted", "load_s",       "peak_mib"};
  out << "arm,pager,transport,budget_bytes";
  for (const char* name : metrics) out << "," << name << "_mean," << name << "_sd," << name << "_n";
  out << ",ids_eq_arm0\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const ArmRow& r = rows[i];
    out << csv_escape(r.info.name) << "," << csv_escape(r.info.pager) << "," << csv_escape(r.info.transport) << ","
        << (r.info.budget ? std::to_string(*r.info.budget) : "");
    for (const Summary* s :
         {&r.prefill_tok_s, &r.decode_tok_s, &r.ms_per_token, &r.expert_io_ms, &r.routed_ms, &r.rest_ms, &r.hit_rate,
          &r.bytes_per_token, &r.prefetch_used, &r.prefetch_wasted, &r.load_seconds, &r.peak_mib}) {
      if (s->n) out << "," << number(s->mean, 6) << "," << number(s->sd, 6) << "," << s->n;
      else out << ",,,0";
    }
    out << "," << (i == 0 ? "true" : r.ids_match_arm0 ? (*r.ids_match_arm0 ? "true" : "false") : "") << "\n";
  }
  return out.str();
}

std::string table_json(const TableContext& ctx, const std::vector<ArmRow>& rows,
                       const std::vector<std::vector<ArmRun>>& runs) {
  json doc;
  doc["spec"] = ctx.spec;
  doc["model"] = ctx.model;
  doc["machine"] = ctx.machine;
  doc["date"] = ctx.date;
  doc["command"] = ctx.command;
  doc["repetitions"] = ctx.repetitions;
  doc["prompts"] = ctx.prompts;
  doc["max_tokens"] = ctx.max_tokens;
  doc["warmup_tokens"] = ctx.warmup_tokens;
  doc["order"] = ctx.order;
  doc["reloaded_per_repetition"] = ctx.reloaded_per_repetition;
  doc["pager_stats_available"] = ctx.pager_stats_available;
  doc["arms"] = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const ArmRow& r = rows[i];
    json arm;
    arm["name"] = r.info.name;
    arm["pager"] = r.info.pager;
    arm["transport"] = r.info.transport;
    arm["budget"] = r.info.budget_text;
    arm["budget_bytes"] = r.info.budget ? json(*r.info.budget) : json(nullptr);
    arm["prefill_tok_s"] = summary_json(r.prefill_tok_s);
    arm["decode_tok_s"] = summary_json(r.decode_tok_s);
    arm["ms_per_token"] = summary_json(r.ms_per_token);
    arm["expert_io_ms_per_token"] = summary_json(r.expert_io_ms);
    arm["routed_compute_ms_per_token"] = summary_json(r.routed_ms);
    arm["rest_ms_per_token"] = summary_json(r.rest_ms);
    arm["hit_rate"] = summary_json(r.hit_rate);
    arm["bytes_per_token"] = summary_json(r.bytes_per_token);
    arm["prefetch_used"] = summary_json(r.prefetch_used);
    arm["prefetch_wasted"] = summary_json(r.prefetch_wasted);
    arm["load_seconds"] = summary_json(r.load_seconds);
    arm["load_seconds_estimated"] = r.load_is_estimate;
    arm["peak_mib"] = summary_json(r.peak_mib);
    arm["ids_eq_arm0"] = i == 0 ? json(true) : r.ids_match_arm0 ? json(*r.ids_match_arm0) : json(nullptr);
    json raw = json::array();
    if (i < runs.size()) {
      for (const ArmRun& run : runs[i]) {
        raw.push_back({{"repetition", run.repetition},
                       {"prompt", run.prompt},
                       {"prompt_tokens", run.m.prompt_tokens},
                       {"generated", run.m.generated},
                       {"prefill_seconds", run.m.prefill_seconds},
                       {"decode_seconds", run.m.decode_seconds},
                       {"wall_seconds", run.m.wall_seconds},
                       {"peak_rss_bytes", run.m.peak_rss_bytes},
                       {"ids", run.m.ids}});
      }
    }
    arm["runs"] = std::move(raw);
    doc["arms"].push_back(std::move(arm));
  }
  return doc.dump(2) + "\n";
}

}  // namespace moepage::ablate
