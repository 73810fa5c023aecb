// analysis/model/symbol_events.cpp — the state dump's and the dl helper's
// events into the resolver, and the addresses of events resolved (see
// symbol_events.hpp).
#include "analysis/model/symbol_events.hpp"

#include "analysis/model/trace_env.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;
using reader::FieldKind;
using reader::Scope;

namespace {

// The kind of an event by its name ("provider:event").
bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names)
{
	for (const std::string_view n : names)
		if (name == n)
			return true;
	return false;
}

} // namespace

const SymbolEvents::ClassInfo &SymbolEvents::info(const reader::Item &it)
{
	return classes_.get(it, [&] {
		ClassInfo c;
		const std::string_view name = it.event->cls->name;
		if (name == "lttng_ust_statedump:start")
			c.kind = Kind::dump_start;
		else if (is_one_of(name, {"lttng_ust_statedump:bin_info", "lttng_ust_dl:dlopen", "lttng_ust_dl:dlmopen",
		                          "lttng_ust_lib:load"}))
			c.kind = Kind::load;
		else if (is_one_of(name,
		                   {"lttng_ust_statedump:build_id", "lttng_ust_dl:build_id", "lttng_ust_lib:build_id"}))
			c.kind = Kind::build_id;
		else if (is_one_of(name, {"lttng_ust_statedump:debug_link", "lttng_ust_dl:debug_link",
		                          "lttng_ust_lib:debug_link"}))
			c.kind = Kind::debug_link;
		else if (is_one_of(name, {"lttng_ust_dl:dlclose", "lttng_ust_lib:unload"}))
			c.kind = Kind::unload;
		const reader::FieldDecl payload = reader::scope_root(it, Scope::payload);
		if (c.kind != Kind::other) {
			c.baddr = reader::find_member(payload, "baddr");
			c.memsz = reader::find_member(payload, "memsz");
			c.path = reader::find_member(payload, "path");
			c.is_pic = reader::find_member(payload, "is_pic");
			c.build_id = reader::find_member(payload, "build_id");
			c.crc = reader::find_member(payload, "crc");
			c.filename = reader::find_member(payload, "filename");
		}
		c.vpid = reader::find_context_field(it, "vpid");
		if (!c.vpid)
			c.env_pid = env_process(it.stream->trace().cls).pid;
		c.ip = reader::find_context_field(it, "ip");
		if (c.ip && !c.ip.integer)
			c.ip = {};
		const reader::FieldDecl common = reader::scope_root(it, Scope::stream_event_context);
		if (c.ip && c.ip.scope == Scope::stream_event_context && !common.member("debug_info") &&
		    !reader::decl_of(it, c.ip).is_signed()) {
			const reader::FieldDecl vpid = reader::decl_of(it, c.vpid);
			if (!c.vpid)
				c.debug_info = c.env_pid.has_value();
			else
				c.debug_info = c.vpid.scope == Scope::stream_event_context &&
				               vpid.kind() == FieldKind::integer && vpid.is_signed() &&
				               vpid.bits() == 32;
		}
		if (name.starts_with("lttng_ust_cyg_profile"))
			for (const std::string_view field : {"addr", "call_site"})
				if (const FieldRef ref = reader::find_member(payload, field); ref && ref.integer)
					c.address_fields.emplace_back(field, ref);
		return c;
	});
}

std::optional<int64_t> SymbolEvents::vpid_of(const reader::Item &it, const ClassInfo &c)
{
	if (c.vpid)
		return reader::int_field(it, c.vpid);
	return c.env_pid;
}

std::optional<int64_t> SymbolEvents::process(const reader::Item &it) { return vpid_of(it, info(it)); }

void SymbolEvents::observe(const reader::Item &it)
{
	const ClassInfo &c = info(it);
	if (c.kind == Kind::other)
		return;
	const std::optional<int64_t> vpid = vpid_of(it, c);
	if (!vpid)
		return;
	if (c.kind == Kind::dump_start) {
		resolver_.start_dump(*vpid);
		return;
	}
	const std::optional<int64_t> baddr = reader::int_field(it, c.baddr);
	if (!baddr)
		return;
	const auto base = static_cast<uint64_t>(*baddr);
	switch (c.kind) {
	case Kind::load: {
		const std::optional<int64_t> memsz = reader::int_field(it, c.memsz);
		if (!memsz || !c.path)
			return;
		const std::optional<int64_t> pic = reader::int_field(it, c.is_pic);
		resolver_.load(*vpid, base, static_cast<uint64_t>(*memsz), reader::text_field(it, c.path),
		               !pic || *pic == 1);
		return;
	}
	case Kind::build_id: {
		const reader::Field f = reader::field_at(it, c.build_id);
		build_id_.clear();
		if (f && f.kind() == FieldKind::string) {
			const std::string_view t = f.text();
			build_id_.assign(t.begin(), t.end());
		} else if (f && f.kind() == FieldKind::array && f.length() <= SymbolResolver::kMaxBuildIdBytes) {
			for (const reader::Field e : f.elements())
				build_id_.push_back(static_cast<uint8_t>(e.as_unsigned()));
		}
		resolver_.set_build_id(*vpid, base, build_id_);
		return;
	}
	case Kind::debug_link: {
		const std::optional<int64_t> crc = reader::int_field(it, c.crc);
		if (crc && c.filename)
			resolver_.set_debug_link(*vpid, base, reader::text_field(it, c.filename),
			                         static_cast<uint32_t>(*crc));
		return;
	}
	case Kind::unload:
		resolver_.unload(*vpid, base);
		return;
	case Kind::other:
	case Kind::dump_start:
		return;
	}
}

const Symbol *SymbolEvents::ip(const reader::Item &it)
{
	const ClassInfo &c = info(it);
	return c.ip ? at(it, c.ip) : nullptr;
}

const Symbol *SymbolEvents::at(const reader::Item &it, const FieldRef &ref)
{
	const std::optional<int64_t> vpid = vpid_of(it, info(it));
	const std::optional<int64_t> v = reader::int_field(it, ref);
	return vpid && v ? resolver_.resolve(*vpid, static_cast<uint64_t>(*v)) : nullptr;
}

const std::vector<SymbolEvents::Address> &SymbolEvents::addresses(const reader::Item &it)
{
	addresses_.clear();
	const ClassInfo &c = info(it);
	if (c.address_fields.empty())
		return addresses_;
	const std::optional<int64_t> vpid = vpid_of(it, c);
	if (vpid)
		resolver_.make_room(*vpid, c.address_fields.size());
	for (const auto &[name, ref] : c.address_fields)
		if (const std::optional<int64_t> v = reader::int_field(it, ref)) {
			const auto value = static_cast<uint64_t>(*v);
			addresses_.push_back({name, value, vpid ? resolver_.resolve(*vpid, value) : nullptr});
		}
	return addresses_;
}

bool symbol_events_fields(std::string_view name)
{
	for (const std::string_view prefix : {"lttng_ust_statedump:", "lttng_ust_dl:", "lttng_ust_lib:",
	                                      "lttng_ust_cyg_profile:", "lttng_ust_cyg_profile_fast:"})
		if (name.starts_with(prefix))
			return true;
	return false;
}

std::string symbol_text(const Symbol *s)
{
	if (!s || (s->bin.empty() && s->func.empty()))
		return "unknown";
	std::string t;
	if (!s->func.empty()) {
		t = s->func;
		if (!s->src.empty())
			t += " (" + s->src + ")";
		t += " in ";
	}
	return t + s->bin;
}

} // namespace tracery::analysis
