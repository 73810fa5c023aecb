// event/context_table.hpp — every context `add-context` knows, by name: the
// user-space contexts beyond vpid, vtid and procname (their TSDL fields,
// sizes and what a traced program reads for them), and the list of names with
// their domains that `tracery add-context --list` prints.
//
// The user-space contexts are recorded as LTTng-UST 2.13 records them: the
// same field names (the context's name with '_' before it and '-', ':' made
// '_') and the same types (unsigned integers in base 10), so babeltrace2 and
// Trace Compass show them as they show LTTng's. cgroup_id has no LTTng-UST
// twin: it is the kernel's id of the thread's cgroup v2 (what
// bpf_get_current_cgroup_id() gives, the inode number of its directory).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tracery::event {

// A set of kUserContexts entries: bit i is kUserContexts[i].
using UserContextSet = uint64_t;

enum class UserContextKind : uint8_t {
	ip,           // the address in the emitting function the event returns to
	pthread_id,   // pthread_self()
	vuid,         // getuid()
	vgid,         // getgid()
	ns,           // the inode number of /proc/thread-self/ns/<ns_file>
	cgroup_id,    // the id of the thread's cgroup v2
	perf_counter, // a perf_event_open() counter of the thread
};

struct UserContext {
	std::string_view name;  // as add-context -t takes it: "vuid", "perf:thread:page-fault"
	std::string_view field; // its TSDL field in the stream's event.context: "_vuid"
	uint8_t size;           // bytes: 4 (uint32) or 8 (uint64), little-endian
	UserContextKind kind;
	uint8_t index = 0;        // ns: which of kNamespaceFiles; perf_counter: which of the counters
	uint32_t perf_type = 0;   // perf_counter: perf_event_attr.type (0 hardware, 1 software)
	uint64_t perf_config = 0; // and .config
};

inline constexpr std::array<std::string_view, 8> kNamespaceFiles = {"pid",    "mnt", "net", "user",
                                                                    "cgroup", "uts", "ipc", "time"};

namespace context_detail {
inline constexpr uint32_t kPerfHardware = 0, kPerfSoftware = 1; // linux/perf_event.h's PERF_TYPE_*
struct PerfName {
	std::string_view name, field;
	uint32_t type;
	uint64_t config; // PERF_COUNT_HW_* / PERF_COUNT_SW_*
};
// LTTng's names (and perf(1)'s page-faults), its aliases included: each
// alias is a field of its own name, as in LTTng.
inline constexpr PerfName kPerfNames[] = {
	{"perf:thread:cpu-clock", "_perf_thread_cpu_clock", kPerfSoftware, 0},
	{"perf:thread:task-clock", "_perf_thread_task_clock", kPerfSoftware, 1},
	{"perf:thread:page-fault", "_perf_thread_page_fault", kPerfSoftware, 2},
	{"perf:thread:page-faults", "_perf_thread_page_faults", kPerfSoftware, 2},
	{"perf:thread:faults", "_perf_thread_faults", kPerfSoftware, 2},
	{"perf:thread:context-switches", "_perf_thread_context_switches", kPerfSoftware, 3},
	{"perf:thread:cs", "_perf_thread_cs", kPerfSoftware, 3},
	{"perf:thread:cpu-migrations", "_perf_thread_cpu_migrations", kPerfSoftware, 4},
	{"perf:thread:migrations", "_perf_thread_migrations", kPerfSoftware, 4},
	{"perf:thread:minor-faults", "_perf_thread_minor_faults", kPerfSoftware, 5},
	{"perf:thread:major-faults", "_perf_thread_major_faults", kPerfSoftware, 6},
	{"perf:thread:alignment-faults", "_perf_thread_alignment_faults", kPerfSoftware, 7},
	{"perf:thread:emulation-faults", "_perf_thread_emulation_faults", kPerfSoftware, 8},
	{"perf:thread:cpu-cycles", "_perf_thread_cpu_cycles", kPerfHardware, 0},
	{"perf:thread:cycles", "_perf_thread_cycles", kPerfHardware, 0},
	{"perf:thread:instructions", "_perf_thread_instructions", kPerfHardware, 1},
	{"perf:thread:cache-references", "_perf_thread_cache_references", kPerfHardware, 2},
	{"perf:thread:cache-misses", "_perf_thread_cache_misses", kPerfHardware, 3},
	{"perf:thread:branch-instructions", "_perf_thread_branch_instructions", kPerfHardware, 4},
	{"perf:thread:branches", "_perf_thread_branches", kPerfHardware, 4},
	{"perf:thread:branch-misses", "_perf_thread_branch_misses", kPerfHardware, 5},
	{"perf:thread:bus-cycles", "_perf_thread_bus_cycles", kPerfHardware, 6},
	{"perf:thread:stalled-cycles-frontend", "_perf_thread_stalled_cycles_frontend", kPerfHardware, 7},
	{"perf:thread:idle-cycles-frontend", "_perf_thread_idle_cycles_frontend", kPerfHardware, 7},
	{"perf:thread:stalled-cycles-backend", "_perf_thread_stalled_cycles_backend", kPerfHardware, 8},
	{"perf:thread:idle-cycles-backend", "_perf_thread_idle_cycles_backend", kPerfHardware, 8},
};
inline constexpr size_t kFixedCount = 13;
inline constexpr std::array<UserContext, kFixedCount> kFixed = {{
	{"ip", "_ip", 8, UserContextKind::ip},
	{"pthread_id", "_pthread_id", 8, UserContextKind::pthread_id},
	{"vuid", "_vuid", 4, UserContextKind::vuid},
	{"vgid", "_vgid", 4, UserContextKind::vgid},
	{"pid_ns", "_pid_ns", 8, UserContextKind::ns, 0},
	{"mnt_ns", "_mnt_ns", 8, UserContextKind::ns, 1},
	{"net_ns", "_net_ns", 8, UserContextKind::ns, 2},
	{"user_ns", "_user_ns", 8, UserContextKind::ns, 3},
	{"cgroup_ns", "_cgroup_ns", 8, UserContextKind::ns, 4},
	{"uts_ns", "_uts_ns", 8, UserContextKind::ns, 5},
	{"ipc_ns", "_ipc_ns", 8, UserContextKind::ns, 6},
	{"time_ns", "_time_ns", 8, UserContextKind::ns, 7},
	{"cgroup_id", "_cgroup_id", 8, UserContextKind::cgroup_id},
}};
inline constexpr size_t kPerfCount = sizeof(kPerfNames) / sizeof(kPerfNames[0]);
consteval std::array<UserContext, kFixedCount + kPerfCount> table()
{
	std::array<UserContext, kFixedCount + kPerfCount> t{};
	for (size_t i = 0; i < kFixedCount; ++i)
		t[i] = kFixed[i];
	for (size_t i = 0; i < kPerfCount; ++i) {
		const PerfName &p = kPerfNames[i];
		t[kFixedCount + i] = {p.name, p.field, 8, UserContextKind::perf_counter, static_cast<uint8_t>(i),
		                      p.type, p.config};
	}
	return t;
}
} // namespace context_detail

// The perf counters a thread may have open, one per kUserContexts entry of
// kind perf_counter (UserContext::index).
inline constexpr size_t kPerfCounterCount = context_detail::kPerfCount;

// The user-space contexts beyond vpid, vtid and procname, in the order a
// record carries them.
inline constexpr auto kUserContexts = context_detail::table();
static_assert(kUserContexts.size() <= 64, "UserContextSet has a bit per entry");

// The index in kUserContexts of a name, nullopt for no user-space context
// (vpid, vtid and procname are not in the table).
std::optional<size_t> find_user_context(std::string_view name) noexcept;

inline constexpr size_t user_contexts_size(UserContextSet set) noexcept
{
	size_t n = 0;
	for (size_t i = 0; i < kUserContexts.size(); ++i)
		if (set >> i & 1)
			n += kUserContexts[i].size;
	return n;
}

// The contexts of each domain, for `tracery add-context --list`.
enum ContextDomain : uint8_t { kUserDomain = 1, kKernelDomain = 2 };

// The kernel domain's block of the table (add-context -k -t NAME): its names,
// in the order of kernel::KernelContext (kernel/kernel_context.hpp).
inline constexpr std::array<std::string_view, 13> kKernelContextNames = {
	"tid",    "pid",     "ppid",   "prio",   "procname",  "pid_ns",  "mnt_ns",
	"net_ns", "user_ns", "uts_ns", "ipc_ns", "cgroup_ns", "time_ns",
};

struct ContextListing {
	std::string_view name;
	uint8_t domains; // ContextDomain bits
};
// Every context name once, with the domains that record it: user space's
// (vpid, vtid, procname, then kUserContexts), then the kernel's that user
// space does not have.
std::vector<ContextListing> context_listing();

} // namespace tracery::event
