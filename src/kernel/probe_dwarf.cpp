// kernel/probe_dwarf.cpp — a function's parameters (or return value) from
// DWARF with libdw, placed by the x86-64 SysV calling convention as uprobe
// fetch-args (probe_site.hpp says what is recorded and what is not). Walks
// are bounded: units, DIEs visited, nesting, type chains.
#include "kernel/probe_elf.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <algorithm>
#include <array>
#include <set>

namespace tracery::kernel::probe_detail {

bool has_dwarf(const ElfFile &file)
{
	GElf_Shdr shdr;
	return file.section(".debug_info", SHT_NULL, &shdr) != nullptr && shdr.sh_type != SHT_NOBITS &&
	       shdr.sh_size > 0;
}

namespace {

constexpr size_t kMaxTypeChain = 32;
constexpr size_t kMaxChildren = 100'000;
constexpr size_t kMaxRanges = 1'000;

class DwarfHandle {
public:
	explicit DwarfHandle(Elf *elf) : dw_(dwarf_begin_elf(elf, DWARF_C_READ, nullptr)) {}
	~DwarfHandle()
	{
		if (dw_)
			dwarf_end(dw_);
	}
	DwarfHandle(const DwarfHandle &) = delete;
	DwarfHandle &operator=(const DwarfHandle &) = delete;
	Dwarf *get() const { return dw_; }

private:
	Dwarf *dw_;
};

// The DIE that DW_AT_type of `die` names (following abstract origins and
// specifications), false for none (void).
bool type_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;
	return dwarf_attr_integrate(die, DW_AT_type, &attr) && dwarf_formref_die(&attr, out);
}

bool is_qualifier(int tag)
{
	return tag == DW_TAG_typedef || tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
	       tag == DW_TAG_restrict_type || tag == DW_TAG_atomic_type;
}

// `die` with typedefs and qualifiers taken off; false when that is void
// or the chain is too long.
bool peel(Dwarf_Die *die, Dwarf_Die *out)
{
	*out = *die;
	for (size_t i = 0; i < kMaxTypeChain; ++i) {
		if (!is_qualifier(dwarf_tag(out)))
			return true;
		Dwarf_Die next;
		if (!type_of(out, &next))
			return false;
		*out = next;
	}
	return false;
}

std::string die_name(Dwarf_Die *die)
{
	const char *n = dwarf_diename(die);
	return n ? std::string(n).substr(0, 200) : std::string();
}

// A C spelling of a type, for status and docs: "const char *", "enum
// color", "size_t", "struct point".
std::string c_type_name(Dwarf_Die *type, bool is_void, size_t depth = 0)
{
	if (is_void)
		return "void";
	if (depth > kMaxTypeChain)
		return "...";
	Dwarf_Die inner;
	const bool inner_void = !type_of(type, &inner);
	const std::string name = die_name(type);
	switch (dwarf_tag(type)) {
	case DW_TAG_base_type:
	case DW_TAG_typedef:
	case DW_TAG_unspecified_type:
		return name.empty() ? std::string("?") : name;
	case DW_TAG_enumeration_type:
		return cat("enum ", name.empty() ? std::string("(anonymous)") : name);
	case DW_TAG_structure_type:
		return cat("struct ", name.empty() ? std::string("(anonymous)") : name);
	case DW_TAG_union_type:
		return cat("union ", name.empty() ? std::string("(anonymous)") : name);
	case DW_TAG_class_type:
		return cat("class ", name.empty() ? std::string("(anonymous)") : name);
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type: {
		const char *mark = dwarf_tag(type) == DW_TAG_pointer_type     ? "*"
		                   : dwarf_tag(type) == DW_TAG_reference_type ? "&"
		                                                              : "&&";
		if (!inner_void && dwarf_tag(&inner) == DW_TAG_subroutine_type)
			return cat("(function) ", mark);
		const std::string in = c_type_name(&inner, inner_void, depth + 1);
		return cat(in, in.ends_with('*') ? "" : " ", mark);
	}
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type: {
		const char *q = dwarf_tag(type) == DW_TAG_const_type      ? "const"
		                : dwarf_tag(type) == DW_TAG_volatile_type ? "volatile"
		                : dwarf_tag(type) == DW_TAG_restrict_type ? "restrict"
		                                                          : "_Atomic";
		const std::string in = c_type_name(&inner, inner_void, depth + 1);
		// A qualified pointer: "char *const"; anything else: "const int".
		return in.ends_with('*') || in.ends_with('&') ? cat(in, q) : cat(q, " ", in);
	}
	default:
		return name.empty() ? std::string("?") : name;
	}
}

// How a parameter or return value of one type is passed and recorded.
struct Placement {
	enum class Class { integer, string, floating, stop } cls = Class::stop;
	std::string type; // uprobe type
	std::string why;  // for floating and stop
};

std::string int_type(bool is_signed, Dwarf_Word bytes) { return cat(is_signed ? "s" : "u", std::to_string(bytes * 8)); }

bool plain_size(Dwarf_Word b) { return b == 1 || b == 2 || b == 4 || b == 8; }

Placement classify(Dwarf_Die *type, bool is_void)
{
	Placement p;
	Dwarf_Die t;
	if (is_void || !peel(type, &t)) {
		p.why = "an unknown type";
		return p;
	}
	const int tag = dwarf_tag(&t);
	Dwarf_Word bytes = 0;
	{
		Dwarf_Attribute a;
		if (dwarf_attr_integrate(&t, DW_AT_byte_size, &a))
			dwarf_formudata(&a, &bytes);
	}
	if (tag == DW_TAG_base_type) {
		Dwarf_Word enc = 0;
		Dwarf_Attribute a;
		if (dwarf_attr_integrate(&t, DW_AT_encoding, &a))
			dwarf_formudata(&a, &enc);
		switch (enc) {
		case DW_ATE_float:
			if (bytes <= 8) {
				p.cls = Placement::Class::floating;
				p.why = "in an xmm register, which uprobes cannot read";
			} else {
				p.why = "a long double (passed in memory)";
			}
			return p;
		case DW_ATE_boolean:
			if (!plain_size(bytes))
				break;
			p.cls = Placement::Class::integer;
			p.type = int_type(false, bytes);
			return p;
		case DW_ATE_signed:
		case DW_ATE_signed_char:
		case DW_ATE_unsigned:
		case DW_ATE_unsigned_char:
		case DW_ATE_UTF:
			if (!plain_size(bytes))
				break;
			p.cls = Placement::Class::integer;
			p.type = int_type(enc == DW_ATE_signed || enc == DW_ATE_signed_char, bytes);
			return p;
		default:
			break;
		}
		p.why = bytes > 8 ? "an integer wider than 8 bytes (two registers)" : "a base type of another kind";
		return p;
	}
	if (tag == DW_TAG_enumeration_type && plain_size(bytes)) {
		// Signed when its underlying type is, else when an enumerator
		// is negative.
		bool is_signed = false;
		Dwarf_Die under, base;
		Dwarf_Attribute a;
		Dwarf_Word enc = 0;
		if (type_of(&t, &under) && peel(&under, &base) && dwarf_attr_integrate(&base, DW_AT_encoding, &a) &&
		    dwarf_formudata(&a, &enc) == 0) {
			is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
		} else {
			Dwarf_Die e;
			size_t n = 0;
			for (int r = dwarf_child(&t, &e); r == 0 && n < kMaxChildren;
			     r = dwarf_siblingof(&e, &e), ++n) {
				Dwarf_Sword v = 0;
				if (dwarf_tag(&e) == DW_TAG_enumerator && dwarf_attr(&e, DW_AT_const_value, &a) &&
				    dwarf_formsdata(&a, &v) == 0 && v < 0)
					is_signed = true;
			}
		}
		p.cls = Placement::Class::integer;
		p.type = int_type(is_signed, bytes);
		return p;
	}
	if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type || tag == DW_TAG_rvalue_reference_type) {
		// A pointer to a 1-byte character type: a string.
		Dwarf_Die pointee, base;
		Dwarf_Attribute a;
		Dwarf_Word enc = 0, size = 0;
		if (tag == DW_TAG_pointer_type && type_of(&t, &pointee) && peel(&pointee, &base) &&
		    dwarf_tag(&base) == DW_TAG_base_type && dwarf_attr_integrate(&base, DW_AT_encoding, &a) &&
		    dwarf_formudata(&a, &enc) == 0 && dwarf_attr_integrate(&base, DW_AT_byte_size, &a) &&
		    dwarf_formudata(&a, &size) == 0 && size == 1 &&
		    (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char || enc == DW_ATE_signed ||
		     enc == DW_ATE_unsigned || enc == DW_ATE_UTF)) {
			p.cls = Placement::Class::string;
			p.type = "string";
			return p;
		}
		p.cls = Placement::Class::integer;
		p.type = "x64";
		return p;
	}
	if (tag == DW_TAG_unspecified_type) { // C++'s nullptr_t
		p.cls = Placement::Class::integer;
		p.type = "x64";
		return p;
	}
	if (tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_class_type) {
		p.why = "passed by value: how its bytes are split between registers and memory is not worked out here";
		return p;
	}
	p.why = "a type not placed here";
	return p;
}

bool starts_at(Dwarf_Die *die, uint64_t addr)
{
	Dwarf_Addr pc = 0;
	if (dwarf_entrypc(die, &pc) == 0 && pc == addr)
		return true;
	if (dwarf_lowpc(die, &pc) == 0 && pc == addr)
		return true;
	Dwarf_Addr base = 0, start = 0, end = 0;
	ptrdiff_t off = 0;
	for (size_t n = 0; n < kMaxRanges && (off = dwarf_ranges(die, off, &base, &start, &end)) > 0; ++n)
		if (start == addr)
			return true;
	return false;
}

bool may_hold_functions(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
	       tag == DW_TAG_union_type || tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_module;
}

// Depth-first search below `unit` for the subprogram entered at `addr`;
// *budget counts the DIEs left to visit.
bool find_in_unit(Dwarf_Die *unit, uint64_t addr, size_t *budget, Dwarf_Die *out)
{
	std::vector<Dwarf_Die> stack; // the next sibling to visit, at each depth
	Dwarf_Die child;
	if (dwarf_child(unit, &child) != 0)
		return false;
	stack.push_back(child);
	while (!stack.empty()) {
		if (*budget == 0)
			return false;
		--*budget;
		Dwarf_Die die = stack.back();
		Dwarf_Die sibling;
		if (dwarf_siblingof(&stack.back(), &sibling) == 0)
			stack.back() = sibling;
		else
			stack.pop_back();
		const int tag = dwarf_tag(&die);
		if (tag == DW_TAG_subprogram && !dwarf_hasattr(&die, DW_AT_declaration) && starts_at(&die, addr)) {
			*out = die;
			return true;
		}
		if (may_hold_functions(tag) && stack.size() < kMaxDwarfDepth && dwarf_child(&die, &child) == 0)
			stack.push_back(child);
	}
	return false;
}

bool find_subprogram(Dwarf *dw, uint64_t addr, Dwarf_Die *out)
{
	size_t budget = kMaxDwarfDies;
	// The unit the address ranges name, then every unit.
	Dwarf_Die unit;
	if (dwarf_addrdie(dw, addr, &unit) && find_in_unit(&unit, addr, &budget, out))
		return true;
	Dwarf_Off off = 0, next = 0;
	size_t header = 0;
	for (size_t n = 0;
	     n < kMaxDwarfUnits && budget > 0 && dwarf_nextcu(dw, off, &next, &header, nullptr, nullptr, nullptr) == 0;
	     ++n, off = next) {
		if (dwarf_offdie(dw, off + header, &unit) && find_in_unit(&unit, addr, &budget, out))
			return true;
		if (next <= off)
			break;
	}
	return false;
}

bool usable_name(const std::string &n, const std::set<std::string> &taken)
{
	if (n.empty() || n.size() > 31 || n.starts_with("common_") || n.starts_with("__probe") || taken.count(n))
		return false;
	const auto ident = [](char c) {
		return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
	};
	return !(n[0] >= '0' && n[0] <= '9') && std::all_of(n.begin(), n.end(), ident);
}

void place_parameters(Dwarf_Die *function, ProbeSite *site)
{
	static constexpr std::array<const char *, 6> kIntRegisters = {"%di", "%si", "%dx", "%cx", "%r8", "%r9"};
	size_t ints = 0, xmms = 0, slots = 0, position = 0;
	std::set<std::string> taken;
	Dwarf_Die die, scope = *function;
	// A concrete copy without its own parameter DIEs: its origin's.
	Dwarf_Attribute origin_attr;
	Dwarf_Die origin;
	bool has_params = false;
	size_t n = 0;
	for (int r = dwarf_child(&scope, &die); r == 0 && n < kMaxChildren; r = dwarf_siblingof(&die, &die), ++n)
		has_params |= dwarf_tag(&die) == DW_TAG_formal_parameter;
	if (!has_params && dwarf_attr(function, DW_AT_abstract_origin, &origin_attr) &&
	    dwarf_formref_die(&origin_attr, &origin))
		scope = origin;
	n = 0;
	for (int r = dwarf_child(&scope, &die); r == 0 && n < kMaxChildren; r = dwarf_siblingof(&die, &die), ++n) {
		const int tag = dwarf_tag(&die);
		if (tag == DW_TAG_unspecified_parameters) {
			site->notes.emplace_back("the variable arguments (...): not recorded");
			return;
		}
		if (tag != DW_TAG_formal_parameter)
			continue;
		++position;
		std::string name = die_name(&die);
		if (!usable_name(name, taken))
			name = cat("arg", std::to_string(position));
		Dwarf_Die type;
		const bool is_void = !type_of(&die, &type);
		const std::string c_type = c_type_name(&type, is_void);
		const Placement p = classify(&type, is_void);
		if (p.cls == Placement::Class::stop) {
			site->notes.push_back(cat(name, " (", c_type, "): ", p.why,
			                          "; it and the parameters after it: "
			                          "not recorded"));
			return;
		}
		if (p.cls == Placement::Class::floating) {
			if (xmms < 8)
				++xmms;
			else
				++slots;
			site->notes.push_back(cat(name, " (", c_type, "): ", p.why, ", not recorded"));
			continue;
		}
		if (site->args.size() == kMaxProbeArgs) {
			site->notes.push_back(
				cat("parameters after the ", std::to_string(kMaxProbeArgs), "th: not recorded"));
			return;
		}
		// Integer class: the next register, else the next stack slot
		// above the return address.
		const std::string where = ints < kIntRegisters.size()
		                                  ? std::string(kIntRegisters[ints++])
		                                  : cat("+", std::to_string(8 + 8 * slots++), "(%sp)");
		taken.insert(name);
		ProbeArg arg;
		arg.name = name;
		arg.fetch = p.cls == Placement::Class::string ? cat("+0(", where, ")") : where;
		arg.type = p.type;
		arg.c_type = c_type;
		site->args.push_back(std::move(arg));
	}
}

void place_return(Dwarf_Die *function, ProbeSite *site)
{
	Dwarf_Die type;
	if (!type_of(function, &type))
		return; // void
	const std::string c_type = c_type_name(&type, false);
	const Placement p = classify(&type, false);
	switch (p.cls) {
	case Placement::Class::integer:
		site->args.push_back({"ret", "$retval", p.type, c_type});
		break;
	case Placement::Class::string:
		site->args.push_back({"ret", "+0($retval)", "string", c_type});
		break;
	case Placement::Class::floating:
	case Placement::Class::stop:
		site->notes.push_back(cat("the return value (", c_type, "): ", p.why, ", not recorded"));
		break;
	}
}

} // namespace

bool dwarf_args(const ElfFile &file, uint64_t addr, bool is_return, ProbeSite *site)
{
	const DwarfHandle dw(file.elf());
	if (!dw.get())
		throw ProbeError(
			cat(file.path(), ": cannot read its DWARF (", dwarf_errmsg(-1) ? dwarf_errmsg(-1) : "?", ")"));
	Dwarf_Die function;
	if (!find_subprogram(dw.get(), addr, &function))
		return false;
	if (is_return)
		place_return(&function, site);
	else
		place_parameters(&function, site);
	return true;
}

} // namespace tracery::kernel::probe_detail
