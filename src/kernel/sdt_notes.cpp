// kernel/sdt_notes.cpp — the SDT (USDT) probe points of an ELF file: the
// .note.stapsdt notes that <sys/sdt.h> compiles in, read with libelf, as
// probe sites (probe_site.hpp: the prelink adjustment, the semaphore, the
// operands).
#include "kernel/probe_elf.hpp"

#include <cstring>
#include <set>

namespace tracery::kernel::probe_detail {

namespace {

constexpr GElf_Word kStapsdtNoteType = 3;
constexpr uint64_t kMaxSdtNoteBytes = uint64_t{64} << 20;

struct SdtNote {
	uint64_t pc = 0, base = 0, semaphore = 0;
	std::string_view provider, name, operands;
};

// The NUL-terminated string at *pos of desc, nullopt if none ends there.
std::optional<std::string_view> take_string(std::string_view desc, size_t *pos)
{
	const size_t end = desc.find('\0', *pos);
	if (end == std::string_view::npos)
		return std::nullopt;
	const std::string_view s = desc.substr(*pos, end - *pos);
	*pos = end + 1;
	return s;
}

uint64_t read_u64(std::string_view desc, size_t at)
{
	uint64_t v = 0;
	std::memcpy(&v, desc.data() + at, sizeof v); // ElfFile accepts little-endian files only, as this host
	return v;
}

} // namespace

std::vector<ProbeSite> sdt_sites(const ElfFile &file, const ProbeSpec &spec)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = file.section(".note.stapsdt", SHT_NOTE, &shdr);
	if (!scn)
		throw ProbeError(cat(file.path(), " has no SDT probes (no .note.stapsdt section)"));
	Elf_Data *data = file.data(scn, shdr, ".note.stapsdt", kMaxSdtNoteBytes);
	// A prelinked file's notes keep the link-time base; .stapsdt.base
	// has moved with the code.
	GElf_Shdr base_shdr;
	const bool has_base = file.section(".stapsdt.base", SHT_NULL, &base_shdr) != nullptr;

	std::vector<ProbeSite> sites;
	std::set<std::string> all;
	size_t offset = 0;
	size_t count = 0;
	GElf_Nhdr nhdr;
	size_t name_off = 0, desc_off = 0;
	while (data && offset < data->d_size) {
		const size_t next = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off);
		if (next == 0 || next <= offset)
			break;
		offset = next;
		if (++count > kMaxSdtNotes)
			throw ProbeError(cat(file.path(), ": more than ", std::to_string(kMaxSdtNotes), " SDT notes"));
		const char *bytes = static_cast<const char *>(data->d_buf);
		if (nhdr.n_type != kStapsdtNoteType || nhdr.n_namesz != 8 ||
		    std::memcmp(bytes + name_off, "stapsdt", 8) != 0)
			continue;
		const std::string_view desc(bytes + desc_off, nhdr.n_descsz);
		if (desc.size() < 3 * sizeof(uint64_t))
			continue;
		SdtNote note;
		note.pc = read_u64(desc, 0);
		note.base = read_u64(desc, 8);
		note.semaphore = read_u64(desc, 16);
		size_t pos = 24;
		const auto provider = take_string(desc, &pos);
		const auto name = provider ? take_string(desc, &pos) : std::nullopt;
		const auto operands = name ? take_string(desc, &pos) : std::nullopt;
		if (!name)
			continue; // a damaged note; the others may still serve
		note.provider = *provider;
		note.name = *name;
		note.operands = operands.value_or("");
		if (note.provider != spec.provider || note.name != spec.name) {
			if (all.size() < 10'000)
				all.insert(cat(note.provider.substr(0, 256), ":", note.name.substr(0, 256)));
			continue;
		}
		// Prelink: pc and semaphore move by (.stapsdt.base's address - the
		// note's base), modulo 2^64 like the addresses themselves.
		const uint64_t shift = has_base && note.base != 0 ? base_shdr.sh_addr - note.base : 0;
		const uint64_t pc = note.pc + shift;
		const std::string where = cat("SDT probe ", spec.provider, ":", spec.name, " at ", hex(pc));
		ProbeSite site;
		site.path = spec.path;
		const auto off = file.file_offset(pc, true);
		if (!off)
			throw ProbeError(cat(where, " is outside every executable load segment of ", file.path()));
		site.offset = *off;
		if (note.semaphore != 0) {
			const uint64_t sem = note.semaphore + shift;
			const auto sem_off = file.file_offset(sem, false);
			if (!sem_off)
				throw ProbeError(cat(where, ": its semaphore (", hex(sem),
				                     ") is outside every load segment's file bytes of ", file.path()));
			site.ref_ctr_offset = *sem_off;
		}
		SdtArgs args = parse_sdt_operands(note.operands);
		site.args = std::move(args.args);
		site.notes = std::move(args.notes);
		site.args_source = "SDT note";
		sites.push_back(std::move(site));
	}
	if (sites.empty()) {
		const std::vector<std::string> names(all.begin(), all.end());
		const std::vector<std::string> close = close_names(cat(spec.provider, ":", spec.name), names);
		std::string m = cat("no SDT probe ", spec.provider, ":", spec.name, " in ", file.path(), " (",
		                    std::to_string(all.size()), " others");
		for (size_t i = 0; i < close.size(); ++i)
			m += cat(i ? ", " : "; close ones: ", close[i]);
		m += ")";
		throw ProbeError(m);
	}
	return sites;
}

} // namespace tracery::kernel::probe_detail
