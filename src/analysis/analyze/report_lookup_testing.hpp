// analysis/analyze/report_lookup_testing.hpp — for the analyses' tests: find a
// report's table by key, a column by key, and a cell by the value of one
// column in its row (the first column unless named), throwing with what was
// missing so a failed lookup names itself in the test's output; whether a
// note begins so; narrowing options made one at a time.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include "analysis/output/report.hpp"
#include "analysis/read/narrowing.hpp"

namespace tracery::analysis::testing {

inline const Table &table(const Report &r, const std::string &key)
{
	for (const Table &t : r.tables)
		if (t.key == key)
			return t;
	throw std::runtime_error("no table " + key);
}

inline size_t column(const Table &t, const std::string &key)
{
	for (size_t i = 0; i < t.columns.size(); ++i)
		if (t.columns[i].key == key)
			return i;
	throw std::runtime_error("no column " + key + " in " + t.key);
}

template <typename Id>
Cell find_cell(const Report &r, const std::string &tab, const std::string &by, const Id &id, const std::string &key)
{
	const Table &t = table(r, tab);
	const size_t k = column(t, by);
	for (const auto &row : t.rows)
		if (const Id *v = std::get_if<Id>(&row[k]); v && *v == id)
			return row[column(t, key)];
	if constexpr (std::is_same_v<Id, std::string>)
		throw std::runtime_error("no row " + id + " in " + tab);
	else
		throw std::runtime_error("no row " + std::to_string(id) + " in " + tab);
}

// The cell of column `key` in the row of table `tab` whose column `by` holds
// `id`.
inline Cell cell(const Report &r, const std::string &tab, const std::string &by, const std::string &id,
                 const std::string &key)
{
	return find_cell(r, tab, by, id, key);
}

// The same with the table's first column as `by`.
inline Cell cell(const Report &r, const std::string &tab, int64_t id, const std::string &key)
{
	return find_cell(r, tab, table(r, tab).columns.at(0).key, id, key);
}
inline Cell cell(const Report &r, const std::string &tab, const std::string &id, const std::string &key)
{
	return find_cell(r, tab, table(r, tab).columns.at(0).key, id, key);
}

inline int64_t i64(const Cell &c) { return std::get<int64_t>(c); }
inline double dbl(const Cell &c) { return std::get<double>(c); }

// Whether a note of the report begins with `start`.
inline bool has_note(const Report &r, const std::string &start)
{
	for (const std::string &n : r.notes)
		if (n.rfind(start, 0) == 0)
			return true;
	return false;
}

// Narrowing options, set one by one (designated initializers would have to
// name every member).
inline NarrowOptions between(std::string begin, std::string end)
{
	NarrowOptions o;
	o.begin = std::move(begin);
	o.end = std::move(end);
	return o;
}
inline NarrowOptions on_cpus(std::vector<int64_t> cpus)
{
	NarrowOptions o;
	o.cpus = std::move(cpus);
	return o;
}
inline NarrowOptions of_pids(std::vector<int64_t> pids)
{
	NarrowOptions o;
	o.pids = std::move(pids);
	return o;
}
inline NarrowOptions of_tids(std::vector<int64_t> tids)
{
	NarrowOptions o;
	o.tids = std::move(tids);
	return o;
}
inline NarrowOptions named(std::vector<std::string> procnames)
{
	NarrowOptions o;
	o.procnames = std::move(procnames);
	return o;
}

} // namespace tracery::analysis::testing
