// analysis/sql/derived.hpp — the cores of the SQL export's derived tables,
// fed plain arguments (what the unit tests drive with made-up sequences):
// processes from the threads the task table knows. Thread states, system
// calls and user spans come from the model's ThreadStates, SyscallPairs and
// OpenSpans (model/thread_states.hpp, syscalls.hpp, spans.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/model/tasks.hpp"
#include "analysis/model/thread_states.hpp"

namespace tracery::analysis::sql {

// Thread states are the model's (model/thread_states.hpp).
using ThreadStates = analysis::ThreadStates;

// One row per process of the threads the table knows: its name (its main
// thread's, else one of its threads'), parent, start and end (its main
// thread's fork and exit), and how many threads it had. By pid.
struct ProcessRow {
	int64_t pid = 0;
	std::optional<int64_t> ppid;
	std::string name;
	std::optional<int64_t> start_ns, end_ns;
	int64_t threads = 0;
};
std::vector<ProcessRow> processes_of(const TaskTable &tasks);

} // namespace tracery::analysis::sql
