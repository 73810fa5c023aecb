// The verbs of the tracery command, once their arguments are parsed.
#pragma once

#include "analysis/output/report.hpp"
#include "analysis/read/narrowing.hpp"
#include "cli/tracking.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tracery::analysis {
struct ViewOptions;
}

namespace tracery::cli {

struct Args {
	std::string session;     // -s NAME or positional NAME
	std::string output;      // create --output
	bool snapshot = false;   // create --snapshot
	std::string url;         // create --set-url
	bool local_copy = false; // create --local-copy
	std::string relay_key;   // create --relay-key FILE
	std::string relay_ca;    // create --relay-ca FILE
	std::string live;        // create --live[=PERIOD]
	bool live_given = false;
	bool public_live = false; // create --public-live
	bool all = false;         // destroy --all, enable-event -a
	bool userspace = false;   // -u (the default domain)
	bool kernel = false;      // -k
	bool syscall = false;     // enable-event -k --syscall, list -k --syscall
	std::string channel;      // -c / enable-channel NAME
	std::vector<std::string> patterns;
	std::string filter;
	std::string userspace_probe;  // enable-event -k --userspace-probe=SPEC
	std::string probe_args;       // --args
	uint32_t capture_buffers = 0; // enable-event -k --syscall --capture-buffers[=BYTES]
	std::string subbuf_size, num_subbuf;
	bool overwrite = false, buffers_pid = false, buffers_uid = false;
	std::string blocking_timeout;                // enable-channel --blocking-timeout
	std::string tracefile_size, tracefile_count; // enable-channel --tracefile-size/--tracefile-count
	std::string switch_timer, monitor_timer;     // enable-channel --switch-timer/--monitor-timer
	std::vector<std::string> contexts;
	bool list_contexts = false;                   // add-context --list
	std::vector<std::string> targets;             // view NAME|DIR...
	std::vector<std::string> target_sessions;     // view -s NAME (a session, whatever its name)
	std::vector<std::string> target_paths;        // view --path DIR (a directory, whatever its name)
	std::string begin, end;                       // view --begin/--end
	std::vector<std::string> names;               // view --names
	std::vector<std::string> fields;              // view --fields
	std::string live_url;                         // view --live URL
	bool from_now = false;                        // view --live --from-now
	std::string view_key, view_ca;                // view --live --relay-key/--relay-ca
	TrackingArgs tracking;                        // track/untrack
	bool json = false;                            // stats/analyze/query --json
	std::string span_begin, span_end, match;      // analyze latency --begin/--end/--match
	analysis::NarrowOptions narrow;               // stats/analyze --begin/--end/--pid/--tid/--procname/--cpu
	size_t top = 0;                               // stats/analyze --top N (0: every row)
	std::string sort;                             // stats/analyze --sort COLUMN ("": each table's own order)
	bool fixed_units = false;                     // stats/analyze --fixed-units (durations in µs)
	std::string bucket_width, hist_min, hist_max; // analyze --bucket-width/--min/--max (durations)
	size_t buckets = 0;                           // analyze --buckets N
	int64_t contended_ns = 1000;                  // analyze locks --contended
	size_t longest = 10;                          // analyze locks --longest
	bool tree = false, folded = false;            // analyze calls --tree/--folded
	std::string weight = "time";                  // analyze calls --weight
	std::string format;                           // export --format
	std::vector<std::string> spans;               // export/query --span BEGIN,END[,FIELD]
	std::vector<std::string> counters;            // export --counter EVENT:FIELD
	std::vector<std::string> focus;               // export --focus PID|NAME (html)
	bool force = false;                           // export --force
	bool csv = false;                             // query --csv
	std::string clickhouse_url;                   // export --url, query --clickhouse
	std::string table_prefix;                     // export --table-prefix (clickhouse)
	std::string cluster;                          // export --cluster (clickhouse)
	long clickhouse_timeout_s = 60;               // export/query --timeout (clickhouse)
	bool symbols = false;                         // view/stats/analyze/export/query --symbols
	std::string debug_info_dir;                   // --debug-info-dir DIR (with --symbols)
	std::vector<std::string> exclude;             // enable-event --exclude
	bool no_wait = false;                         // destroy --no-wait
};

// "a,b" "c" -> a, b, c (empty parts dropped).
std::vector<std::string> split_commas(const std::vector<std::string> &args);

int verb_create(const Args &a);
int verb_destroy(const Args &a);
int verb_enable_channel(const Args &a);
int verb_disable_channel(const Args &a);
int verb_enable_event(const Args &a, bool disable);
int verb_add_context(const Args &a);
int verb_start(const Args &a);
int verb_stop(const Args &a);
int verb_status(const Args &a);
int verb_list(const Args &a);
int verb_track(const Args &a, bool untrack);
int verb_view(const Args &a);
// A report of stats or analyze on stdout as --sort, the histogram options,
// --top, --json and --fixed-units say; returns 0.
int print_report(analysis::Report r, const Args &a);
// view --live URL [--from-now] [--relay-key FILE [--relay-ca FILE]] (view_live.cpp)
int view_live(const Args &a, const analysis::ViewOptions &options);
int verb_stats(const Args &a);
// kind: cputop, syscalls, schedlat, irq, latency, locks, calls
int verb_analyze(const Args &a, const std::string &kind);
// TARGET... OUT (targets: the traces, then the output)
int verb_export(const Args &a);
// TARGET... SQL (targets: the traces or a database, then the statements)
int verb_query(const Args &a);
int verb_version();

} // namespace tracery::cli
