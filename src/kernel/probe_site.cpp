// kernel/probe_site.cpp — resolve_probe() (probe_site.hpp): a function
// probe's symbol found in the ELF symbol tables and made a file offset,
// its arguments from DWARF or --args; SDT probes are in sdt_notes.cpp.
#include "kernel/probe_site.hpp"

#include "kernel/probe_elf.hpp"

#include <algorithm>
#include <set>

namespace tracery::kernel {

using probe_detail::cat;
using probe_detail::ElfFile;
using probe_detail::hex;

namespace {

struct Symbol {
	uint64_t value = 0, size = 0;
	unsigned type = STT_NOTYPE, bind = STB_LOCAL;
};

struct SymbolTable {
	bool present = false;
	std::vector<Symbol> matches;    // named `name`, defined
	std::vector<std::string> names; // every defined function (when asked for)
};

// The symbols named `name` in the first section of `type` (SHT_SYMTAB or
// SHT_DYNSYM) of `file`, and every function name when `collect`.
SymbolTable read_symbols(const ElfFile &file, GElf_Word type, std::string_view name, bool collect)
{
	SymbolTable t;
	GElf_Shdr shdr;
	Elf_Scn *scn = file.section_of_type(type, &shdr);
	if (!scn)
		return t;
	t.present = true;
	const std::string_view what = type == SHT_SYMTAB ? ".symtab" : ".dynsym";
	if (shdr.sh_entsize != sizeof(Elf64_Sym))
		return t;
	Elf_Data *d = file.data(scn, shdr, what, kMaxSymbols * sizeof(Elf64_Sym));
	if (!d)
		return t;
	const size_t count = d->d_size / sizeof(Elf64_Sym);
	std::set<std::string_view> seen;
	for (size_t i = 0; i < count; ++i) {
		GElf_Sym sym;
		if (!gelf_getsym(d, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		const char *s = elf_strptr(file.elf(), shdr.sh_link, sym.st_name);
		if (!s || !*s)
			continue;
		const auto st_type = static_cast<unsigned>(GELF_ST_TYPE(sym.st_info));
		if (name == s)
			t.matches.push_back(
				{sym.st_value, sym.st_size, st_type, static_cast<unsigned>(GELF_ST_BIND(sym.st_info))});
		if (collect && (st_type == STT_FUNC || st_type == STT_GNU_IFUNC) && seen.insert(s).second)
			t.names.emplace_back(s);
	}
	return t;
}

std::string suggestions(std::string_view symbol, const std::vector<std::string> &names)
{
	const std::vector<std::string> close = close_names(symbol, names);
	if (close.empty())
		return "no close names";
	std::string s("close names: ");
	for (size_t i = 0; i < close.size(); ++i) {
		if (i)
			s += ", ";
		s += close[i];
	}
	return s;
}

// The one function of `matches`, or a ProbeError.
Symbol pick_function(const ElfFile &file, const std::string &symbol, const std::vector<Symbol> &matches)
{
	std::vector<Symbol> funcs;
	for (const Symbol &m : matches) {
		if (m.type == STT_GNU_IFUNC)
			throw ProbeError(
				cat(symbol, " in ", file.path(),
			            " is an indirect function (STT_GNU_IFUNC): its symbol is the resolver that "
			            "picks an implementation at load time, not supported; probe the "
			            "implementation's own symbol"));
		if (m.type == STT_FUNC && m.value != 0 &&
		    std::none_of(funcs.begin(), funcs.end(), [&](const Symbol &f) { return f.value == m.value; }))
			funcs.push_back(m);
	}
	if (funcs.empty())
		throw ProbeError(cat(symbol, " in ", file.path(), " is not a function (symbol type ",
		                     std::to_string(matches.front().type), ")"));
	if (funcs.size() > 1) {
		// Local functions of one name in several units: a global
		// definition, if there is exactly one, is what the name means.
		std::vector<Symbol> global;
		std::copy_if(funcs.begin(), funcs.end(), std::back_inserter(global),
		             [](const Symbol &f) { return f.bind != STB_LOCAL; });
		if (global.size() == 1)
			return global.front();
		std::string where;
		for (size_t i = 0; i < funcs.size() && i < 4; ++i)
			where += cat(i ? ", " : "", hex(funcs[i].value));
		throw ProbeError(cat(symbol, " names ", std::to_string(funcs.size()), " functions in ", file.path(),
		                     " (at ", where, funcs.size() > 4 ? ", ..." : "", "): ambiguous"));
	}
	return funcs.front();
}

void apply_user_args(const std::vector<ProbeArg> &args, ProbeSite *site)
{
	site->args = args;
	site->args_source = "--args";
	site->notes.clear();
}

// `fetch` with each $argN replaced by where SDT operand N is at `site`
// (its note's fetch-arg argN). Throws ProbeError for an operand the site
// does not have, or could not say as a fetch-arg.
std::string with_sdt_operands(const std::string &name, std::string fetch, const ProbeSite &site)
{
	for (size_t at = fetch.find("$arg"); at != std::string::npos; at = fetch.find("$arg", at)) {
		size_t end = at + 4;
		while (end < fetch.size() && fetch[end] >= '0' && fetch[end] <= '9')
			++end;
		const std::string operand = fetch.substr(at + 1, end - at - 1);
		const auto it = std::find_if(site.args.begin(), site.args.end(),
		                             [&](const ProbeArg &a) { return a.name == operand; });
		if (it == site.args.end()) {
			std::string have;
			for (const ProbeArg &a : site.args)
				have += cat(have.empty() ? "" : " ", a.name);
			throw ProbeError(cat("bad --args: ", name, " uses $", operand,
			                     ", which the probe point at file offset ", hex(site.offset),
			                     " does not have (", have.empty() ? "no operands" : have,
			                     site.notes.empty() ? "" : cat("; ", site.notes.front()), ")"));
		}
		fetch.replace(at, end - at, it->fetch);
		at += it->fetch.size();
	}
	return fetch;
}

} // namespace

std::vector<ProbeSite> resolve_probe(int fd, const ProbeSpec &spec, std::string_view user_args)
{
	const bool is_return = spec.kind == ProbeSpec::Kind::function_return;
	std::vector<ProbeArg> given;
	if (!user_args.empty()) {
		given = parse_user_args(user_args);
		for (const ProbeArg &a : given) {
			if (!is_return && a.fetch.find("$retval") != std::string::npos)
				throw ProbeError(cat("bad --args: ", a.name,
				                     " uses $retval, which only a return probe "
				                     "(SYMBOL%return) has"));
			if (spec.kind != ProbeSpec::Kind::sdt && a.fetch.find("$arg") != std::string::npos)
				throw ProbeError(cat("bad --args: ", a.name,
				                     " uses an SDT operand ($argN), which only an sdt: probe has"));
		}
	}
	const ElfFile file(fd, spec.path);
	if (spec.kind == ProbeSpec::Kind::sdt) {
		std::vector<ProbeSite> sites = probe_detail::sdt_sites(file, spec);
		if (!given.empty())
			for (ProbeSite &s : sites) {
				std::vector<ProbeArg> args = given;
				for (ProbeArg &a : args)
					a.fetch = with_sdt_operands(a.name, a.fetch, s);
				apply_user_args(args, &s);
			}
		return sites;
	}

	// The symbol: .symtab, else .dynsym, else a debug file's .symtab.
	const SymbolTable symtab = read_symbols(file, SHT_SYMTAB, spec.symbol, false);
	SymbolTable found = symtab;
	if (found.matches.empty())
		found = read_symbols(file, SHT_DYNSYM, spec.symbol, false);
	std::unique_ptr<ElfFile> debug;
	bool debug_looked = false;
	std::string tried;
	auto debug_file = [&]() -> const ElfFile * {
		if (!debug_looked) {
			debug_looked = true;
			debug = probe_detail::find_debug_file(file, &tried);
		}
		return debug.get();
	};
	if (found.matches.empty() && !symtab.present && debug_file())
		found = read_symbols(*debug, SHT_SYMTAB, spec.symbol, false);
	if (found.matches.empty()) {
		if (symtab.present)
			throw ProbeError(
				cat("no function ", spec.symbol, " in ", file.path(), "; ",
			            suggestions(spec.symbol, read_symbols(file, SHT_SYMTAB, spec.symbol, true).names)));
		const SymbolTable dynsym = read_symbols(file, SHT_DYNSYM, spec.symbol, true);
		const std::string id = file.build_id();
		std::string m = cat(file.path(), " is stripped: no symbol table (.symtab), and ", spec.symbol,
		                    " is not among its dynamic symbols (", suggestions(spec.symbol, dynsym.names),
		                    "); probe by an exported symbol with --args, or install the debug file");
		m += id.empty() ? std::string(" (it has no build-id)")
		                : cat(" (build-id ", id, "; looked for ", tried.empty() ? "nothing" : tried, ")");
		throw ProbeError(m);
	}
	const Symbol sym = pick_function(file, spec.symbol, found.matches);
	if (spec.symbol_offset != 0 && spec.symbol_offset >= sym.size)
		throw ProbeError(cat(spec.symbol, "+", std::to_string(spec.symbol_offset), " is not inside ",
		                     spec.symbol,
		                     sym.size == 0 ? std::string(" (its size is unknown: only +0 can be probed)")
		                                   : cat(" (", std::to_string(sym.size), " bytes)"),
		                     " in ", file.path()));
	const uint64_t addr = sym.value + spec.symbol_offset;
	const auto offset = file.file_offset(addr, true);
	if (!offset)
		throw ProbeError(cat(spec.symbol, " (", hex(addr), ") is outside every executable load segment of ",
		                     file.path()));

	ProbeSite site;
	site.path = spec.path;
	site.offset = *offset;
	if (!given.empty()) {
		apply_user_args(given, &site);
		return {site};
	}
	if (spec.symbol_offset != 0) {
		site.args_source = "none (arguments are placed only at a function's entry: address only; give --args)";
		return {site};
	}
	const ElfFile *dwarf = probe_detail::has_dwarf(file) ? &file : nullptr;
	if (!dwarf && debug_file() && probe_detail::has_dwarf(*debug))
		dwarf = debug.get();
	if (!dwarf) {
		site.args_source = "none (no DWARF: address only)";
		return {site};
	}
	if (!probe_detail::dwarf_args(*dwarf, sym.value, is_return, &site)) {
		site.args.clear();
		site.notes.clear();
		site.args_source = cat("none (no DWARF entry for ", spec.symbol, ": address only)");
		return {site};
	}
	site.args_source = dwarf == &file ? std::string("DWARF") : cat("DWARF from ", dwarf->path());
	return {site};
}

} // namespace tracery::kernel
