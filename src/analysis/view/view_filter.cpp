// analysis/view/view_filter.cpp — filter expressions bound to a trace's event
// classes and evaluated over decoded events (see view_filter.hpp). The types
// and their rules are those of filter/compiler.hpp, on CTF's field types.
#include "analysis/view/view_filter.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "ctf/reader/fields.hpp"
#include "ctf/reader/trace_reader.hpp"
#include "filter/compiler.hpp"
#include "filter/glob.hpp"
#include "filter/parser.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;
using filter::ContextName;
using filter::Error;
using filter::Expr;
using filter::ExprKind;
using filter::Operator;
using reader::Field;
using reader::FieldDecl;
using reader::FieldKind;
using reader::Scope;

namespace {

enum class Kind : uint8_t { integer, floating, string };

struct Val {
	int64_t i = 0;
	double f = 0;
	const char *s = nullptr;
	size_t n = 0;
};

enum class NodeKind : uint8_t { constant, field, element, unary, binary, logical, strings };

struct Node {
	NodeKind node = NodeKind::constant;
	Kind kind = Kind::integer;
	Operator op = Operator::lnot;
	bool is_float_op = false; // binary: computed in doubles
	bool literal = false;     // a string constant (a glob)
	Val value;                // constant
	std::string text;         // string constant (its bytes as the glob reads them)
	// field, element: the root of its scope, and the member ordinals from it
	// down to the field
	FieldDecl root;
	std::vector<uint32_t> path;
	uint64_t index = 0; // element
	std::unique_ptr<Node> lhs, rhs;
};

// A field reference as the expression writes it, found in one event class.
struct Found {
	FieldDecl root; // its scope's
	std::vector<uint32_t> path;
	FieldDecl decl;
};

struct EventScopes {
	const reader::TracePlans::StreamPlans *stream;
	const reader::TracePlans::EventPlans *event;
	FieldDecl root(Scope s) const { return scope_root(*stream, event, s); }
};

// The member of a scope's root struct that path "a.b.c" names (structs
// only; each name as shown or as written).
std::optional<Found> find_in(const FieldDecl &root, std::string_view dotted)
{
	if (!root)
		return std::nullopt;
	Found f{root, {}, root};
	while (true) {
		const size_t dot = dotted.find('.');
		const std::string_view part = dotted.substr(0, dot);
		if (f.decl.kind() != FieldKind::structure)
			return std::nullopt;
		uint32_t k = 0;
		FieldDecl found;
		for (const FieldDecl m : f.decl.members()) {
			if (m.metadata_name() && (m.name() == part || *m.metadata_name() == part)) {
				found = m;
				break;
			}
			++k;
		}
		if (!found)
			return std::nullopt;
		f.path.push_back(k);
		f.decl = found;
		if (dot == std::string_view::npos)
			break;
		dotted.remove_prefix(dot + 1);
	}
	return f;
}

const char *context_name(ContextName c)
{
	switch (c) {
	case ContextName::vpid:
		return "vpid";
	case ContextName::vtid:
		return "vtid";
	case ContextName::procname:
		return "procname";
	default:
		return "cpu_id";
	}
}

std::optional<Found> resolve_field(const EventScopes &ev, const std::string &name)
{
	return find_in(ev.root(Scope::payload), name);
}

std::optional<Found> resolve_context(const EventScopes &ev, ContextName c)
{
	const char *name = context_name(c);
	static constexpr Scope kContextOrder[] = {Scope::event_context, Scope::stream_event_context,
	                                          Scope::packet_context};
	static constexpr Scope kCpuOrder[] = {Scope::packet_context, Scope::event_context, Scope::stream_event_context};
	for (const Scope s : c == ContextName::cpu_id ? kCpuOrder : kContextOrder)
		if (auto f = find_in(ev.root(s), name))
			return f;
	return std::nullopt;
}

Kind kind_of(const FieldDecl &d, bool &ok)
{
	ok = true;
	switch (d.kind()) {
	case FieldKind::integer:
		return Kind::integer;
	case FieldKind::floating:
		return Kind::floating;
	case FieldKind::string:
		return Kind::string;
	default:
		ok = false;
		return Kind::integer;
	}
}

// Every field and context reference of the expression, in order.
void collect_refs(const Expr &e, std::vector<const Expr *> &out)
{
	if (e.kind == ExprKind::field || e.kind == ExprKind::element || e.kind == ExprKind::context)
		out.push_back(&e);
	if (e.lhs)
		collect_refs(*e.lhs, out);
	if (e.rhs)
		collect_refs(*e.rhs, out);
}

bool truthy(Kind k, const Val &v) { return k == Kind::floating ? v.f != 0 : v.i != 0; }
double as_double(Kind k, const Val &v) { return k == Kind::floating ? v.f : static_cast<double>(v.i); }

// Runs a bound expression over one event's values. false: rejected.
class Evaluator {
public:
	explicit Evaluator(const reader::Item *item) : item_(item) {}

	bool eval(const Node &n, Val &out) const
	{
		switch (n.node) {
		case NodeKind::constant:
			out = n.value;
			return true;
		case NodeKind::field:
		case NodeKind::element:
			return load(n, out);
		case NodeKind::unary: {
			Val v;
			if (!eval(*n.lhs, v))
				return false;
			const Kind k = n.lhs->kind;
			switch (n.op) {
			case Operator::lnot:
				out.i = !truthy(k, v);
				return true;
			case Operator::neg:
				if (k == Kind::floating)
					out.f = -v.f;
				else
					out.i = static_cast<int64_t>(0 - static_cast<uint64_t>(v.i));
				return true;
			case Operator::bnot:
				out.i = ~v.i;
				return true;
			default:
				out = v;
				return true;
			}
		}
		case NodeKind::logical: {
			Val l;
			if (!eval(*n.lhs, l))
				return false;
			const bool is_and = n.op == Operator::land;
			if (truthy(n.lhs->kind, l) != is_and) {
				out.i = is_and ? 0 : 1;
				return true;
			}
			Val r;
			if (!eval(*n.rhs, r))
				return false;
			out.i = truthy(n.rhs->kind, r);
			return true;
		}
		case NodeKind::strings: {
			Val l, r;
			if (!eval(*n.lhs, l) || !eval(*n.rhs, r))
				return false;
			bool same;
			if (n.rhs->literal)
				same = filter::glob_match(r.s, r.n, l.s, l.n);
			else if (n.lhs->literal)
				same = filter::glob_match(l.s, l.n, r.s, r.n);
			else
				same = l.n == r.n && std::memcmp(l.s, r.s, l.n) == 0;
			out.i = (n.op == Operator::eq) == same;
			return true;
		}
		case NodeKind::binary: {
			Val l, r;
			if (!eval(*n.lhs, l) || !eval(*n.rhs, r))
				return false;
			if (!n.is_float_op) {
				const auto v = filter::fold_int(n.op, l.i, r.i);
				out.i = v.value_or(0);
				return v.has_value();
			}
			const double a = as_double(n.lhs->kind, l), b = as_double(n.rhs->kind, r);
			switch (n.op) {
			case Operator::mul:
				out.f = a * b;
				break;
			case Operator::div:
				out.f = a / b;
				break;
			case Operator::add:
				out.f = a + b;
				break;
			case Operator::sub:
				out.f = a - b;
				break;
			case Operator::lt:
				out.i = a < b;
				break;
			case Operator::le:
				out.i = a <= b;
				break;
			case Operator::gt:
				out.i = a > b;
				break;
			case Operator::ge:
				out.i = a >= b;
				break;
			case Operator::eq:
				out.i = a == b;
				break;
			default: // ne
				out.i = a != b;
				break;
			}
			return true;
		}
		}
		return false;
	}

private:
	bool load(const Node &n, Val &out) const
	{
		Field f(n.root, reader::scope_values(*item_, n.root.scope()).data(), 0);
		for (const uint32_t k : n.path) {
			auto m = f.members().begin();
			for (uint32_t j = 0; j < k; ++j)
				++m;
			f = *m;
		}
		if (n.node == NodeKind::element) {
			if (n.index >= f.length())
				return false; // a sequence shorter than the index
			f = f.element(n.index);
		}
		switch (n.kind) {
		case Kind::integer:
			out.i = f.as_signed();
			break;
		case Kind::floating:
			out.f = f.as_double();
			break;
		case Kind::string: {
			const std::string_view text = f.text();
			out.s = text.data();
			out.n = text.size();
			break;
		}
		}
		return true;
	}

	const reader::Item *item_;
};

// The expression for one event class: nodes with their types, or an Error.
class Binder {
public:
	explicit Binder(const EventScopes &ev) : ev_(ev) {}

	std::unique_ptr<Node> bind(const Expr &root)
	{
		auto n = visit(root);
		if (n->kind == Kind::string)
			throw Error{"a string is not a condition; compare it with == or !=", root.position};
		return n;
	}

private:
	static Error type_error(const Expr &e, const std::string &message)
	{
		return Error{"'" + e.text + "' " + message, e.position};
	}
	static Error operator_error(const Expr &e, const char *message)
	{
		return Error{"'" + std::string(filter::spelling(e.op)) + "' " + message, e.position};
	}

	// Folds a node whose operands are constants (unless it rejects: then it
	// stays, to reject each event).
	static std::unique_ptr<Node> fold(std::unique_ptr<Node> n)
	{
		const bool lc = !n->lhs || n->lhs->node == NodeKind::constant;
		const bool rc = !n->rhs || n->rhs->node == NodeKind::constant;
		if (!lc || !rc || n->node == NodeKind::constant)
			return n;
		Val v;
		if (!Evaluator(nullptr).eval(*n, v))
			return n;
		auto c = std::make_unique<Node>();
		c->kind = n->kind;
		c->value = v;
		return c;
	}

	std::unique_ptr<Node> visit(const Expr &e)
	{
		auto n = std::make_unique<Node>();
		switch (e.kind) {
		case ExprKind::integer:
			n->value.i = e.integer;
			return n;
		case ExprKind::floating:
			n->kind = Kind::floating;
			n->value.f = e.floating;
			return n;
		case ExprKind::string:
			n->kind = Kind::string;
			n->literal = true;
			n->text = e.text;
			n->value.s = n->text.data();
			n->value.n = n->text.size();
			return n;
		case ExprKind::field:
		case ExprKind::context: {
			const auto f = e.kind == ExprKind::field ? resolve_field(ev_, e.text)
			                                         : resolve_context(ev_, e.context);
			// (the caller checked that every reference resolves)
			const FieldDecl &d = f->decl;
			bool ok;
			n->kind = kind_of(d, ok);
			if (!ok) {
				const std::string name = e.kind == ExprKind::field
				                                 ? e.text
				                                 : std::string("$ctx.") + context_name(e.context);
				Error err{"'" + name + "' ", e.position};
				if (d.kind() == FieldKind::array)
					err.message += "is an array; compare one element, e.g. " + name + "[0]";
				else if (d.kind() == FieldKind::structure)
					err.message +=
						"is a structure; compare one of its members, e.g. " + name + ".x";
				else
					err.message += "is a variant; filters cannot read variants";
				throw err;
			}
			if (e.kind == ExprKind::context &&
			    (n->kind == Kind::string) != (e.context == ContextName::procname))
				throw Error{"the event's '$ctx." + std::string(context_name(e.context)) + "' is " +
				                    (n->kind == Kind::string ? "a string" : "a number"),
				            e.position};
			n->node = NodeKind::field;
			n->root = f->root;
			n->path = f->path;
			return n;
		}
		case ExprKind::element: {
			auto index = visit(*e.lhs);
			if (index->node != NodeKind::constant || index->kind != Kind::integer)
				throw Error{"an index must be a constant integer", e.lhs->position};
			if (index->value.i < 0)
				throw Error{"negative index", e.lhs->position};
			const auto f = resolve_field(ev_, e.text);
			if (f->decl.kind() != FieldKind::array)
				throw type_error(e, "is not an array or a sequence");
			bool ok;
			n->kind = kind_of(f->decl.element(), ok);
			if (!ok || n->kind == Kind::string)
				throw type_error(e, "has elements that are not numbers");
			n->node = NodeKind::element;
			n->root = f->root;
			n->path = f->path;
			n->index = static_cast<uint64_t>(index->value.i);
			if (const auto length = f->decl.fixed_length(); length && n->index >= *length)
				throw Missing{}; // past the array: no event of this class passes
			return n;
		}
		case ExprKind::unary: {
			n->lhs = visit(*e.lhs);
			const Kind k = n->lhs->kind;
			if (k == Kind::string)
				throw operator_error(e, "needs a number, not a string");
			if (e.op == Operator::bnot && k == Kind::floating)
				throw operator_error(e, "needs an integer, not a float");
			n->node = NodeKind::unary;
			n->op = e.op;
			n->kind = e.op == Operator::lnot ? Kind::integer : k;
			return fold(std::move(n));
		}
		default: { // binary
			n->lhs = visit(*e.lhs);
			n->rhs = visit(*e.rhs);
			n->op = e.op;
			const Kind l = n->lhs->kind, r = n->rhs->kind;
			if (e.op == Operator::land || e.op == Operator::lor) {
				if (l == Kind::string || r == Kind::string)
					throw operator_error(e, "needs numbers, not a string");
				n->node = NodeKind::logical;
				return fold(std::move(n));
			}
			const bool equality = e.op == Operator::eq || e.op == Operator::ne;
			if (equality && (l == Kind::string || r == Kind::string)) {
				if (l != r)
					throw operator_error(e, "compares a string with a number");
				n->node = NodeKind::strings;
				if (n->lhs->literal && n->rhs->literal) {
					// two literals: equal when either, as a glob, matches the other
					const Val &a = n->lhs->value, &b = n->rhs->value;
					const bool same = filter::glob_match(a.s, a.n, b.s, b.n) ||
					                  filter::glob_match(b.s, b.n, a.s, a.n);
					auto c = std::make_unique<Node>();
					c->value.i = (e.op == Operator::eq) == same;
					return c;
				}
				return n;
			}
			if (l == Kind::string || r == Kind::string)
				throw operator_error(e, "needs numbers, not a string");
			if (filter::needs_integers(e.op) && (l == Kind::floating || r == Kind::floating))
				throw operator_error(e, "needs integers, not a float");
			n->node = NodeKind::binary;
			n->is_float_op = l == Kind::floating || r == Kind::floating;
			n->kind = filter::is_comparison(e.op) || !n->is_float_op ? Kind::integer : Kind::floating;
			return fold(std::move(n));
		}
		}
	}

public:
	struct Missing {};

private:
	const EventScopes &ev_;
};

struct Bound {
	std::unique_ptr<Node> root; // null: no event of the class passes
};

} // namespace

struct ViewFilter::Impl {
	std::string text;
	std::unique_ptr<Expr> expr;
	std::unordered_map<const reader::TracePlans::EventPlans *, Bound> classes;
	const reader::TracePlans::EventPlans *last = nullptr;
	const Bound *last_bound = nullptr;

	[[noreturn]] void fail(const Error &e) const
	{
		throw std::invalid_argument("bad filter: " + filter::render_error(text, e));
	}
};

ViewFilter::ViewFilter(const std::string &expression) : impl_(std::make_unique<Impl>())
{
	impl_->text = expression;
	Error e{};
	impl_->expr = filter::parse(expression, &e);
	if (!impl_->expr)
		impl_->fail(e);
}

ViewFilter::~ViewFilter() = default;

void ViewFilter::bind(const reader::TraceSet &set, const std::function<bool(const std::string &)> &wanted)
{
	Impl &m = *impl_;
	std::vector<EventScopes> events;
	for (const auto &t : set.traces())
		for (const auto &[sid, sc] : t->cls.streams) {
			const auto *sp = t->plans->stream(sid);
			if (!sp)
				continue;
			for (const auto &ep : sp->events)
				if (wanted(ep.cls->name))
					events.push_back({sp, &ep});
		}
	std::vector<const Expr *> refs;
	collect_refs(*m.expr, refs);
	const auto has = [](const EventScopes &ev, const Expr &r) {
		return r.kind == ExprKind::context ? resolve_context(ev, r.context).has_value()
		                                   : resolve_field(ev, r.text).has_value();
	};
	// A name that no event class has is a mistake: refused, with a suggestion.
	if (!events.empty())
		for (const Expr *r : refs) {
			if (std::any_of(events.begin(), events.end(),
			                [&](const EventScopes &ev) { return has(ev, *r); }))
				continue;
			if (r->kind == ExprKind::context) {
				const std::string name = context_name(r->context);
				m.fail(Error{
					"no event of the trace has the context field '" + name + "'" +
						(r->context == ContextName::cpu_id
				                         ? std::string()
				                         : " (record it with `tracery add-context -t " + name + "`)"),
					r->position});
			}
			std::string best;
			size_t best_distance = 3; // suggest names at most 2 edits away
			for (const EventScopes &ev : events)
				for (const FieldDecl m : ev.root(Scope::payload).members()) {
					const std::string_view shown = m.name();
					if (const size_t d = filter::edit_distance(r->text, shown); d < best_distance) {
						best = shown;
						best_distance = d;
					}
				}
			m.fail(Error{"unknown field '" + r->text + "'" +
			                     (best.empty() ? "" : "; did you mean '" + best + "'?"),
			             r->position});
		}
	std::optional<Error> first;
	bool any = false;
	for (const EventScopes &ev : events) {
		Bound &b = m.classes[ev.event];
		if (!std::all_of(refs.begin(), refs.end(), [&](const Expr *r) { return has(ev, *r); }))
			continue;
		try {
			b.root = Binder(ev).bind(*m.expr);
			any = true;
		} catch (const Binder::Missing &) {
		} catch (const Error &e) {
			if (!first)
				first = e;
		}
	}
	if (!any && first)
		m.fail(*first);
}

bool ViewFilter::accepts(const reader::Item &item)
{
	Impl &m = *impl_;
	if (item.event != m.last) {
		const auto it = m.classes.find(item.event);
		m.last = item.event;
		m.last_bound = it == m.classes.end() ? nullptr : &it->second;
	}
	if (!m.last_bound || !m.last_bound->root)
		return false;
	Val v;
	if (!Evaluator(&item).eval(*m.last_bound->root, v))
		return false;
	return truthy(m.last_bound->root->kind, v);
}

} // namespace tracery::analysis
