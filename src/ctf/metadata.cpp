// ctf/metadata.cpp — TSDL text for the preamble, stream classes and event classes.
#include "ctf/metadata.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>
#include <stdexcept>
#include <string_view>

#include "ctf/event_header.hpp"
#include "ctf/tsdl.hpp"
#include "event/payload.hpp"

#ifndef TRACERY_VERSION_MAJOR
#define TRACERY_VERSION_MAJOR 0
#define TRACERY_VERSION_MINOR 0
#define TRACERY_VERSION_PATCH 0
#endif

namespace tracery::ctf {

namespace {

std::string local_hostname()
{
	char buf[HOST_NAME_MAX + 1] = {};
	if (gethostname(buf, sizeof buf - 1) != 0)
		return "unknown";
	return buf;
}

// The TSDL type of one value of a scalar type.
const char *scalar_tsdl_type(unsigned type)
{
	switch (type) {
	case TRACERY_TYPE_U8:
	case TRACERY_TYPE_BOOL:
		return "uint8_t";
	case TRACERY_TYPE_U16:
		return "uint16_t";
	case TRACERY_TYPE_U32:
		return "uint32_t";
	case TRACERY_TYPE_U64:
		return "uint64_t";
	case TRACERY_TYPE_S8:
		return "int8_t";
	case TRACERY_TYPE_S16:
		return "int16_t";
	case TRACERY_TYPE_S32:
		return "int32_t";
	case TRACERY_TYPE_S64:
		return "int64_t";
	case TRACERY_TYPE_FLOAT:
		return "floating_point { exp_dig = 8; mant_dig = 24; align = 8; }";
	case TRACERY_TYPE_DOUBLE:
		return "floating_point { exp_dig = 11; mant_dig = 53; align = 8; }";
	default:
		return nullptr;
	}
}

// The TSDL type of a scalar field: an integer shown in hex (an address)
// declares its base, as LTTng-UST's ctf_integer_hex does.
std::string field_tsdl_type(const tracery_field_desc &f)
{
	if (!event::is_hex_field(f))
		return scalar_tsdl_type(f.type);
	return "integer { size = " + std::to_string(event::scalar_size(f.type) * 8) +
	       "; align = 8; signed = " + (event::is_signed_integer_type(f.type) ? "true" : "false") + "; base = 16; }";
}

// "enum : uintN_t { "label" = a ... b, ... }", or the plain integer type if
// no entry fits the integer type. Entries are clipped to the range of the
// integer type; for U64, int64 values are read as their uint64 bit pattern.
std::string enum_tsdl_type(const tracery_field_desc &f)
{
	const unsigned bits = static_cast<unsigned>(event::scalar_size(f.elem_type) * 8);
	const bool is_signed = event::is_signed_integer_type(f.elem_type);
	std::string body;
	const tracery_enum_desc &e = *f.enum_desc;
	for (uint32_t i = 0; i < e.nr_entries; ++i) {
		const tracery_enum_entry &entry = e.entries[i];
		std::string lo, hi;
		if (is_signed) {
			const int64_t min = bits == 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
			const int64_t max = bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
			const int64_t a = std::max(entry.start, min), b = std::min(entry.end, max);
			if (a > b)
				continue;
			lo = std::to_string(a);
			hi = std::to_string(b);
		} else if (bits == 64) {
			const auto a = static_cast<uint64_t>(entry.start), b = static_cast<uint64_t>(entry.end);
			if (a > b)
				continue;
			lo = std::to_string(a);
			hi = std::to_string(b);
		} else {
			const int64_t max = (int64_t{1} << bits) - 1;
			const int64_t a = std::max<int64_t>(entry.start, 0), b = std::min(entry.end, max);
			if (a > b)
				continue;
			lo = std::to_string(a);
			hi = std::to_string(b);
		}
		if (!body.empty())
			body += ", ";
		body += tsdl_string_literal(entry.label ? entry.label : "");
		body += " = ";
		body += lo;
		if (hi != lo) {
			body += " ... ";
			body += hi;
		}
	}
	if (body.empty())
		return scalar_tsdl_type(f.elem_type);
	return std::string("enum : ") + scalar_tsdl_type(f.elem_type) + " { " + body + " }";
}

void check_env_key(const std::string &key)
{
	if (!is_tsdl_identifier(key) || is_tsdl_keyword(key) || is_preamble_type_name(key))
		throw std::invalid_argument("tracery ctf: env key is not a usable TSDL identifier: " + key);
	if (key == "hostname")
		throw std::invalid_argument("tracery ctf: env key is reserved: " + key);
}

void append_env(std::string &m, const std::vector<EnvEntry> &entries)
{
	for (const EnvEntry &e : entries) {
		m += "\t" + e.key + " = ";
		if (const auto *i = std::get_if<int64_t>(&e.value))
			m += std::to_string(*i);
		else
			m += tsdl_string_literal(std::get<std::string>(e.value));
		m += ";\n";
	}
}

} // namespace

std::vector<EnvEntry> tracery_identity()
{
	return {
		{"domain", std::string("ust")},
		{"tracer_name", std::string("tracery")},
		{"tracer_major", int64_t{TRACERY_VERSION_MAJOR}},
		{"tracer_minor", int64_t{TRACERY_VERSION_MINOR}},
		{"tracer_patch", int64_t{TRACERY_VERSION_PATCH}},
	};
}

EnvEntry tracked_processes_entry(const std::string &attribute, const std::set<uint64_t> &values)
{
	std::string list;
	for (uint64_t v : values) {
		if (!list.empty())
			list += ',';
		list += std::to_string(v);
	}
	return {kTrackedEnvPrefix + attribute, list};
}

MetadataWriter::MetadataWriter(TraceInfo info) : info_(std::move(info))
{
	std::set<std::string, std::less<>> seen;
	for (const auto *list : {&info_.identity, &info_.env})
		for (const EnvEntry &e : *list) {
			check_env_key(e.key);
			if (!seen.insert(e.key).second)
				throw std::invalid_argument("tracery ctf: duplicate env key: " + e.key);
		}
	if (info_.hostname.empty())
		info_.hostname = local_hostname();
	if (info_.clock_uuid.is_nil())
		info_.clock_uuid = info_.uuid;
}

std::string MetadataWriter::preamble() const
{
	std::string m;
	m.reserve(4096);
	m += "/* CTF 1.8 */\n\n";
	m += "typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
	     "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	     "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	     "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	     "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	     "typealias integer { size = 8; align = 8; signed = true; } := int8_t;\n"
	     "typealias integer { size = 16; align = 8; signed = true; } := int16_t;\n"
	     "typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	     "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n\n";

	m += "trace {\n"
	     "\tmajor = 1;\n"
	     "\tminor = 8;\n"
	     "\tuuid = \"" +
	     info_.uuid.to_string() +
	     "\";\n"
	     "\tbyte_order = le;\n"
	     "\tpacket.header := struct {\n"
	     "\t\tuint32_t magic;\n"
	     "\t\tuint8_t  uuid[16];\n"
	     "\t\tuint32_t stream_id;\n"
	     "\t\tuint64_t stream_instance_id;\n"
	     "\t} align(8);\n"
	     "};\n\n";

	m += "env {\n";
	m += "\thostname = " + tsdl_string_literal(info_.hostname) + ";\n";
	append_env(m, info_.identity);
	append_env(m, info_.env);
	m += "};\n\n";

	m += "clock {\n";
	m += std::string("\tname = \"") + kClockName + "\";\n";
	m += "\tuuid = \"" + info_.clock_uuid.to_string() + "\";\n";
	m += "\tdescription = " + tsdl_string_literal(info_.clock_scale.description) + ";\n";
	m += "\tfreq = " + std::to_string(info_.clock_scale.freq_hz) + "; /* Frequency, in Hz */\n";
	m += "\tprecision = " + std::to_string(info_.clock_precision) + ";\n";
	m += "\t/* clock value offset from the Epoch: offset_s + offset / freq */\n";
	m += "\toffset_s = " + std::to_string(info_.clock_scale.offset_s) + ";\n";
	m += "\toffset = " + std::to_string(info_.clock_scale.offset_ticks) + ";\n";
	m += "\tabsolute = true;\n";
	m += "};\n\n";

	m += "typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; }"
	     " := uint27_clock_monotonic_t;\n"
	     "typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; }"
	     " := uint64_clock_monotonic_t;\n\n";

	m += "struct packet_context {\n"
	     "\tuint64_clock_monotonic_t timestamp_begin;\n"
	     "\tuint64_clock_monotonic_t timestamp_end;\n"
	     "\tuint64_t content_size;\n"
	     "\tuint64_t packet_size;\n"
	     "\tuint64_t packet_seq_num;\n"
	     "\tuint64_t events_discarded;\n"
	     "\tuint32_t cpu_id;\n"
	     "} align(8);\n\n";

	m += "struct event_header_compact {\n"
	     "\tenum : uint5_t { compact = 0 ... " +
	     std::to_string(kMaxCompactId) + ", extended = " + std::to_string(kExtendedHeaderTag) +
	     " } id;\n"
	     "\tvariant <id> {\n"
	     "\t\tstruct {\n"
	     "\t\t\tuint27_clock_monotonic_t timestamp;\n"
	     "\t\t} compact;\n"
	     "\t\tstruct {\n"
	     "\t\t\tuint32_t id;\n"
	     "\t\t\tuint64_clock_monotonic_t timestamp;\n"
	     "\t\t} extended;\n"
	     "\t} v;\n"
	     "} align(8);\n\n";
	return m;
}

std::string MetadataWriter::stream_class(uint32_t stream_id, const event::ContextOptions &context)
{
	std::string m = "stream {\n";
	m += "\tid = " + std::to_string(stream_id) + ";\n";
	m += "\tevent.header := struct event_header_compact;\n";
	m += "\tpacket.context := struct packet_context;\n";
	if (context.vpid || context.vtid || context.procname || context.more) {
		m += "\tevent.context := struct {\n";
		if (context.vpid)
			m += "\t\tint32_t _vpid;\n";
		if (context.vtid)
			m += "\t\tint32_t _vtid;\n";
		if (context.procname)
			m += "\t\tinteger { size = 8; align = 8; signed = false; encoding = UTF8; } _procname[" +
			     std::to_string(event::kProcnameSize) + "];\n";
		for (size_t i = 0; i < event::kUserContexts.size(); ++i)
			if (context.more >> i & 1)
				m += std::string(event::kUserContexts[i].size == 4 ? "\t\tuint32_t "
				                                                   : "\t\tuint64_t ") +
				     std::string(event::kUserContexts[i].field) + ";\n";
		m += "\t} align(8);\n";
	}
	m += "};\n\n";
	return m;
}

std::string MetadataWriter::event_class(uint32_t stream_id, uint32_t event_id, const tracery_event_desc &desc)
{
	if (const char *err = event::event_desc_error(desc))
		throw std::invalid_argument(std::string("tracery ctf: bad event descriptor: ") + err);

	// User field names first, so that they keep their natural TSDL names;
	// then the names of the count fields of sequences and blobs.
	FieldNameSet names;
	std::vector<std::string> field_names(desc.nr_fields), length_names(desc.nr_fields);
	for (uint32_t i = 0; i < desc.nr_fields; ++i)
		field_names[i] = names.unique(tsdl_field_name(desc.fields[i].name));
	for (uint32_t i = 0; i < desc.nr_fields; ++i) {
		const uint8_t t = desc.fields[i].type;
		if (t == TRACERY_TYPE_SEQUENCE || t == TRACERY_TYPE_BLOB)
			length_names[i] = names.unique("_" + field_names[i] + "_length");
	}

	std::string m = "event {\n";
	m += "\tname = " + tsdl_string_literal(std::string(desc.provider) + ":" + desc.name) + ";\n";
	m += "\tid = " + std::to_string(event_id) + ";\n";
	m += "\tstream_id = " + std::to_string(stream_id) + ";\n";
	m += "\tfields := struct {\n";
	for (uint32_t i = 0; i < desc.nr_fields; ++i) {
		const tracery_field_desc &f = desc.fields[i];
		const std::string &name = field_names[i];
		m += "\t\t";
		switch (f.type) {
		case TRACERY_TYPE_ENUM:
			m += enum_tsdl_type(f) + " " + name + ";\n";
			break;
		case TRACERY_TYPE_STRING:
			m += "string " + name + ";\n";
			break;
		case TRACERY_TYPE_ARRAY:
			m += std::string(scalar_tsdl_type(f.elem_type)) + " " + name + "[" + std::to_string(f.length) +
			     "];\n";
			break;
		case TRACERY_TYPE_SEQUENCE:
			m += "uint32_t " + length_names[i] + ";\n\t\t";
			m += std::string(scalar_tsdl_type(f.elem_type)) + " " + name + "[" + length_names[i] + "];\n";
			break;
		case TRACERY_TYPE_BLOB:
			m += "uint32_t " + length_names[i] + ";\n\t\t";
			m += "integer { size = 8; align = 8; signed = false; base = 16; } " + name + "[" +
			     length_names[i] + "];\n";
			break;
		default:
			m += field_tsdl_type(f) + " " + name + ";\n";
			break;
		}
	}
	m += "\t};\n";
	m += "};\n\n";
	return m;
}

} // namespace tracery::ctf
