// analysis/sql/event_tables.cpp — the per-event tables and the events view
// (see event_tables.hpp).
#include "analysis/sql/event_tables.hpp"
#include "base/ascii.hpp"

#include "analysis/output/json_text.hpp"

#include <algorithm>
#include <set>

namespace tracery::analysis::sql {

namespace reader = ctf::reader;

namespace {

constexpr const char *kFixed[] = {"ts", "cpu", "pid", "tid"};
constexpr int kFixedColumns = 4;
// SQLite's default limits: terms of one compound SELECT, arguments of a function.
constexpr size_t kTermsPerSelect = 400;
constexpr size_t kPairsPerObject = 60;

// A name not yet in `taken` (compared as SQLite does, ignoring ASCII case):
// name, else _name, else name_2, name_3...
std::string unique_name(const std::string &name, std::set<std::string> &taken)
{
	std::string n = name.empty() ? std::string("field") : name;
	if (taken.count(base::ascii_lower(n))) {
		n.insert(n.begin(), '_');
		for (int k = 2; taken.count(base::ascii_lower(n)); ++k) {
			n = name;
			n += '_';
			n += std::to_string(k);
		}
	}
	taken.insert(base::ascii_lower(n));
	return n;
}

} // namespace

const char *sql_type(const reader::FieldType &t)
{
	switch (t.kind) {
	case reader::TypeKind::integer:
		return "INTEGER";
	case reader::TypeKind::floating:
		return "REAL";
	default:
		return "TEXT";
	}
}

bool is_compound(const reader::FieldType &t)
{
	switch (t.kind) {
	case reader::TypeKind::structure:
	case reader::TypeKind::variant:
		return true;
	case reader::TypeKind::array:
	case reader::TypeKind::sequence:
		// a text array or sequence is a string
		return !(t.element && t.element->kind == reader::TypeKind::integer &&
		         t.element->encoding != reader::Encoding::none && t.element->size == 8 &&
		         t.element->align % 8 == 0);
	default:
		return false;
	}
}

bool reserved_table(std::string_view name)
{
	static const std::set<std::string> names = {"events",       "event_classes", "streams", "lost",    "slices",
	                                            "thread_state", "processes",     "threads", "metadata"};
	const std::string l = base::ascii_lower(name);
	return names.count(l) || l.rfind("sqlite_", 0) == 0;
}

EventTables::EventTables(Db &db, const reader::TraceSet &set) : db_(db)
{
	std::set<std::string> taken_tables;
	for (const auto &t : set.traces())
		for (const auto &[sid, sc] : t->cls.streams)
			for (const auto &[eid, ec] : sc.events) {
				auto [where, added] = by_event_.try_emplace(ec.name, tables_.size());
				if (added) {
					Table &tab = tables_.emplace_back();
					tab.event = ec.name;
					std::string name = ec.name.empty() ? std::string("event") : ec.name;
					if (reserved_table(name))
						name += "_event";
					tab.name = unique_name(name, taken_tables);
				}
				Table &tab = tables_[where->second];
				std::set<std::string> taken;
				for (const char *f : kFixed)
					taken.insert(f);
				for (const Column &c : tab.columns)
					taken.insert(base::ascii_lower(c.name));
				const auto add = [&](const reader::TypePtr &scope, bool payload) {
					if (!scope || scope->kind != reader::TypeKind::structure)
						return;
					for (const reader::Member &m : scope->members) {
						const std::string name(reader::shown_name(m.name));
						const char *type = m.type ? sql_type(*m.type) : "TEXT";
						auto key = std::make_tuple(payload, name, std::string(type));
						if (tab.index.count(key))
							continue;
						tab.index.emplace(key, tab.columns.size());
						tab.columns.push_back({unique_name(name, taken), type, payload, name,
						                       m.type && is_compound(*m.type)});
					}
				};
				add(sc.event_context, false);
				add(ec.context, false);
				add(ec.fields, true);
			}
	for (const Table &tab : tables_) {
		std::string sql = "CREATE TABLE ";
		sql += quote_ident(tab.name);
		sql += " (ts INTEGER NOT NULL, cpu INTEGER, pid INTEGER, tid INTEGER";
		for (const Column &c : tab.columns) {
			sql += ", ";
			sql += quote_ident(c.name);
			sql += ' ';
			sql += c.type;
		}
		sql += ')';
		db_.exec(sql);
	}
}

namespace {

// INSERT INTO "table" VALUES (?,...,?)[, (...)] for rows rows.
std::string insert_sql(const std::string &table, size_t columns, size_t rows)
{
	std::string sql = "INSERT INTO ";
	sql += quote_ident(table);
	sql += " VALUES ";
	for (size_t r = 0; r < rows; ++r) {
		sql += r ? ",(" : "(";
		for (size_t k = 0; k < columns; ++k)
			sql += k ? ",?" : "?";
		sql += ')';
	}
	return sql;
}

} // namespace

EventTables::Sink EventTables::make_sink(const reader::Item &it)
{
	Sink s;
	s.table = &tables_.at(by_event_.at(it.event->cls->name));
	s.columns = kFixedColumns + s.table->columns.size();
	// SQLite's default limit: 32766 parameters in a statement
	if (s.columns * kBatchRows <= 32766)
		s.batch = Stmt(db_, insert_sql(s.table->name, s.columns, kBatchRows));
	s.one = Stmt(db_, insert_sql(s.table->name, s.columns, 1));
	s.cells.resize(s.columns * (s.batch ? kBatchRows : 1));
	const auto members = [&](reader::Scope scope, bool payload, std::vector<Member> &out) {
		for (const reader::FieldDecl d : reader::scope_root(it, scope).members()) {
			Member &m = out.emplace_back();
			m.decl = d;
			const char *type = d.type() ? sql_type(*d.type()) : "TEXT";
			const auto i = s.table->index.find({payload, std::string(d.name()), std::string(type)});
			if (i != s.table->index.end())
				m.column = static_cast<int>(kFixedColumns + i->second);
			switch (d.kind()) {
			case reader::FieldKind::integer:
				m.kind = d.is_enumeration() ? Member::enumeration : Member::integer;
				break;
			case reader::FieldKind::floating:
				m.kind = Member::real;
				break;
			case reader::FieldKind::string:
				m.kind = Member::text;
				break;
			default:
				m.kind = Member::json;
			}
		}
	};
	members(reader::Scope::stream_event_context, false, s.stream_context);
	members(reader::Scope::event_context, false, s.context);
	members(reader::Scope::payload, true, s.fields);
	return s;
}

void EventTables::fill_scope(Cell *row, std::vector<Member> &members, std::span<const reader::Value> values)
{
	size_t v = 1;
	for (Member &m : members) {
		if (v >= values.size())
			break;
		const reader::Field field(m.decl, values.data(), v);
		if (m.column < 0) {
			v = field.end();
			continue;
		}
		Cell &cell = row[m.column];
		switch (m.kind) {
		case Member::integer:
			cell.type = Cell::integer;
			cell.i = field.as_signed();
			++v;
			continue;
		case Member::real:
			cell.type = Cell::real;
			cell.f = field.as_double();
			++v;
			continue;
		case Member::enumeration: {
			const std::string *label = nullptr;
			field.for_each_label([&](const std::string &l) {
				if (!label)
					label = &l;
			});
			cell.type = Cell::text;
			cell.s.clear();
			if (label)
				append_utf8(cell.s, *label);
			else
				cell.s = field.is_signed() ? std::to_string(field.as_signed())
				                           : std::to_string(field.as_unsigned());
			++v;
			continue;
		}
		case Member::text:
			cell.type = Cell::text;
			cell.s.clear();
			append_utf8(cell.s, field.text());
			++v;
			continue;
		case Member::json:
			cell.type = Cell::text;
			cell.s.clear();
			v = append_json_value(cell.s, m.decl, values, v);
			continue;
		}
	}
}

void EventTables::insert(const reader::Item &it, std::optional<int64_t> cpu, std::optional<int64_t> pid,
                         std::optional<int64_t> tid)
{
	const std::unique_ptr<Sink> &sp = sinks_.get(it, [&] {
		auto s = std::make_unique<Sink>(make_sink(it));
		all_sinks_.push_back(s.get());
		return s;
	});
	Sink &s = *sp;
	Cell *row = &s.cells[s.pending * s.columns];
	row[0].type = Cell::integer;
	row[0].i = it.ns;
	const std::optional<int64_t> *fixed[] = {&cpu, &pid, &tid};
	for (int k = 0; k < 3; ++k) {
		row[k + 1].type = *fixed[k] ? Cell::integer : Cell::null;
		row[k + 1].i = fixed[k]->value_or(0);
	}
	fill_scope(row, s.stream_context, it.stream_context);
	fill_scope(row, s.context, it.context);
	fill_scope(row, s.fields, it.fields);
	++s.table->rows;
	if (++s.pending * s.columns == s.cells.size())
		flush(s);
}

void EventTables::flush(Sink &s)
{
	const auto bind = [](Stmt &st, const Cell *cells, size_t n) {
		for (size_t k = 0; k < n; ++k) {
			const Cell &c = cells[k];
			const int p = static_cast<int>(k + 1);
			switch (c.type) {
			case Cell::null:
				st.bind_null(p);
				break;
			case Cell::integer:
				st.bind(p, c.i);
				break;
			case Cell::real:
				st.bind(p, c.f);
				break;
			case Cell::text:
				st.bind(p, std::string_view(c.s));
				break;
			}
		}
	};
	if (s.batch && s.pending == kBatchRows) {
		bind(s.batch, s.cells.data(), s.cells.size());
		s.batch.run();
	} else {
		for (size_t r = 0; r < s.pending; ++r) {
			bind(s.one, &s.cells[r * s.columns], s.columns);
			s.one.run();
		}
	}
	s.pending = 0;
}

void EventTables::finish()
{
	for (Sink *s : all_sinks_)
		flush(*s);
	db_.exec("CREATE TABLE event_classes (name TEXT NOT NULL, table_name TEXT NOT NULL, events INTEGER NOT NULL)");
	{
		Stmt ins(db_, "INSERT INTO event_classes VALUES (?, ?, ?)");
		for (const Table &t : tables_) {
			std::string name, table;
			append_utf8(name, t.event);
			append_utf8(table, t.name);
			ins.bind(1, std::string_view(name));
			ins.bind(2, std::string_view(table));
			ins.bind(3, static_cast<int64_t>(t.rows));
			ins.run();
		}
	}
	// SELECT ts, 'NAME' AS name, cpu, pid, tid, json_object('f', "col", ...) AS payload FROM "TABLE" UNION ALL
	// ..., in compounds of at most kTermsPerSelect terms.
	const auto select = [](const Table &t) {
		std::string s = "SELECT ts, ";
		std::string name;
		append_utf8(name, t.event);
		s += quote_text(name);
		s += " AS name, cpu, pid, tid, ";
		std::vector<const Column *> payload;
		for (const Column &c : t.columns)
			if (c.payload)
				payload.push_back(&c);
		if (payload.empty())
			s += "json_object()";
		for (size_t k = 0; k < payload.size(); k += kPairsPerObject) {
			const bool last = k + kPairsPerObject >= payload.size();
			if (!last)
				s += "json_patch(";
			s += "json_object(";
			for (size_t j = k; j < payload.size() && j < k + kPairsPerObject; ++j) {
				const Column &c = *payload[j];
				if (j > k)
					s += ", ";
				std::string field;
				append_utf8(field, c.field);
				s += quote_text(field);
				s += ", ";
				// compound fields are JSON already; JSON has no infinity (SQLite stores NaN as NULL); reals with
				// 17 digits (json_object's own 15 make the largest double overflow)
				const bool real = std::string_view(c.type) == "REAL";
				if (c.json)
					s += "json(";
				else if (real)
					s += "CASE WHEN abs(";
				s += quote_ident(c.name);
				if (c.json) {
					s += ')';
				} else if (real) {
					s += ") <= 1.7976931348623157e308 THEN json(printf('%!.17g', ";
					s += quote_ident(c.name);
					s += ")) END";
				}
			}
			s += ')';
			if (!last)
				s += ", ";
		}
		for (size_t k = kPairsPerObject; k < payload.size(); k += kPairsPerObject)
			s += ')';
		s += " AS payload FROM ";
		s += quote_ident(t.name);
		return s;
	};
	std::string view = "CREATE VIEW events AS ";
	if (tables_.empty())
		view += "SELECT NULL AS ts, NULL AS name, NULL AS cpu, NULL AS pid, NULL AS tid, NULL AS payload WHERE 0";
	const bool nested = tables_.size() > kTermsPerSelect;
	for (size_t k = 0; k < tables_.size(); ++k) {
		if (k && k % kTermsPerSelect == 0) {
			view += ") UNION ALL SELECT * FROM (";
		} else if (k) {
			view += " UNION ALL ";
		} else if (nested) {
			view += "SELECT * FROM (";
		}
		view += select(tables_[k]);
	}
	if (nested)
		view += ')';
	db_.exec(view);
}

} // namespace tracery::analysis::sql
