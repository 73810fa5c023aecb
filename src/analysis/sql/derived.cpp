// analysis/sql/derived.cpp — processes from the task table (see derived.hpp).
#include "analysis/sql/derived.hpp"

#include <algorithm>
#include <map>

namespace tracery::analysis::sql {

std::vector<ProcessRow> processes_of(const TaskTable &tasks)
{
	std::map<int64_t, ProcessRow> rows;
	for (const auto &[tid, t] : tasks.tasks()) {
		const int64_t pid = t.pid.value_or(tid);
		ProcessRow &p = rows[pid];
		p.pid = pid;
		++p.threads;
		if (tid == pid) {
			p.name = t.comm;
			p.ppid = t.ppid;
			p.start_ns = t.start_ns;
			p.end_ns = t.end_ns;
		} else if (p.name.empty()) {
			p.name = t.comm;
		}
	}
	std::vector<ProcessRow> v;
	v.reserve(rows.size());
	for (auto &[pid, p] : rows)
		v.push_back(std::move(p));
	return v;
}

} // namespace tracery::analysis::sql
