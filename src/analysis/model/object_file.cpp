// analysis/model/object_file.cpp — one loaded object's files and the names of
// its addresses, by babeltrace2's rules (see object_file.hpp).
#include "analysis/model/object_file.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libelf.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace tracery::analysis {

namespace {

// Larger files are not read (a debug file of a large program is a few GiB).
constexpr uint64_t kMaxFileSize = uint64_t{16} << 30;

void init_libelf()
{
	static std::once_flag once;
	std::call_once(once, [] { elf_version(EV_CURRENT); });
}

// "name+0x12" (printf's "%#" form, as babeltrace2 writes it: "+0" at 0).
std::string with_offset(const char *name, uint64_t offset)
{
	char b[24];
	snprintf(b, sizeof b, "+%#" PRIx64, offset);
	return std::string(name) + b;
}

std::string join_path(std::string_view a, std::string_view b)
{
	std::string p(a);
	if (!p.empty() && p.back() != '/' && (b.empty() || b.front() != '/'))
		p += '/';
	p += b;
	return p;
}

std::string dir_of(const std::string &path)
{
	const size_t slash = path.rfind('/');
	if (slash == std::string::npos)
		return ".";
	return slash == 0 ? "/" : path.substr(0, slash);
}

// An ELF file open for reading: a regular file of a bounded size.
struct ElfHandle {
	int fd = -1;
	Elf *elf = nullptr;

	ElfHandle() = default;
	ElfHandle(const ElfHandle &) = delete;
	ElfHandle &operator=(const ElfHandle &) = delete;
	~ElfHandle() { close(); }
	void close()
	{
		if (elf)
			elf_end(elf);
		if (fd >= 0)
			::close(fd);
		elf = nullptr;
		fd = -1;
	}
	// Why not, or "".
	std::string open(const std::string &path)
	{
		close();
		// (O_NONBLOCK: a trace may name a FIFO, whose open would wait for a writer)
		fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			return std::strerror(errno);
		struct stat st {};
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			close();
			return "not a regular file";
		}
		if (static_cast<uint64_t>(st.st_size) > kMaxFileSize) {
			close();
			return "larger than 16 GiB, not read";
		}
		init_libelf();
		// ELF_C_READ: read with pread as asked; a file truncated meanwhile
		// gives an error, not a SIGBUS.
		elf = elf_begin(fd, ELF_C_READ, nullptr);
		if (!elf || elf_kind(elf) != ELF_K_ELF) {
			close();
			return "not an ELF file";
		}
		return "";
	}
	bool has_build_id(const std::vector<uint8_t> &id) const
	{
		const void *bytes = nullptr;
		const ssize_t n = dwelf_elf_gnu_build_id(elf, &bytes);
		return n > 0 && static_cast<size_t>(n) == id.size() && std::memcmp(bytes, id.data(), id.size()) == 0;
	}
};

// The CRC-32 of a file's bytes, as .gnu_debuglink records it.
bool file_crc(int fd, uint32_t &crc)
{
	uLong c = crc32(0, nullptr, 0);
	static thread_local char buf[1 << 16];
	uint64_t total = 0;
	for (off_t at = 0;;) {
		const ssize_t n = pread(fd, buf, sizeof buf, at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
			break;
		c = crc32(c, reinterpret_cast<const Bytef *>(buf), static_cast<uInt>(n));
		at += n;
		total += static_cast<uint64_t>(n);
		if (total > kMaxFileSize)
			return false;
	}
	crc = static_cast<uint32_t>(c);
	return true;
}

} // namespace

// The files found for the object: the ELF file whose .symtab names
// functions, the DWARF that names functions and lines.
struct ObjectFile::Files {
	bool usable = true;
	std::string problem;
	ElfHandle elf;        // the file at the path (or the build-id debug file)
	ElfHandle dwarf_file; // a separate debug file, when DWARF is there
	Dwarf *dwarf = nullptr;
	// Per .symtab section (in the file's order): its function symbols by
	// value, then by index (the first of equal values wins).
	struct Symtab {
		size_t strtab;
		std::vector<std::pair<uint64_t, const char *>> functions;
	};
	std::vector<Symtab> symtabs;
	bool symtabs_read = false;

	~Files()
	{
		if (dwarf)
			dwarf_end(dwarf);
	}
};

ObjectFile::ObjectFile(ObjectIdentity id, std::string debug_dir) : id_(std::move(id)), debug_dir_(std::move(debug_dir))
{
}

ObjectFile::~ObjectFile() = default;

namespace {

// DWARF with at least one compile unit, or null.
Dwarf *dwarf_of(Elf *elf)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
	if (!dw)
		return nullptr;
	Dwarf_Off next = 0;
	size_t header = 0;
	if (dwarf_nextcu(dw, 0, &next, &header, nullptr, nullptr, nullptr) != 0) {
		dwarf_end(dw);
		return nullptr;
	}
	return dw;
}

} // namespace

void ObjectFile::open()
{
	files_ = std::make_unique<Files>();
	Files &f = *files_;
	const bool has_id = !id_.build_id.empty();
	const std::string why = f.elf.open(id_.path);
	bool path_ok = why.empty();
	if (path_ok && has_id && !f.elf.has_build_id(id_.build_id)) {
		f.problem = id_.path + ": another build than the trace's (build-id " + build_id_hex(id_.build_id) + ")";
		f.elf.close();
		path_ok = false;
	} else if (!path_ok) {
		f.problem = id_.path + ": " + why;
	}
	const std::string dir = debug_dir_.empty() ? "/usr/lib/debug" : debug_dir_;
	// The file itself, if it has DWARF.
	if (path_ok)
		f.dwarf = dwarf_of(f.elf.elf);
	// The debug file named by the build-id: DWARF, and the symbols when the
	// file at the path is not the object's.
	bool by_id = false;
	if (!f.dwarf && has_id) {
		const std::string hex = build_id_hex(id_.build_id);
		const std::string p = join_path(dir, ".build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug");
		if (f.dwarf_file.open(p).empty() && f.dwarf_file.has_build_id(id_.build_id)) {
			by_id = true;
			f.dwarf = dwarf_of(f.dwarf_file.elf);
			if (!path_ok) {
				std::swap(f.elf.fd, f.dwarf_file.fd);
				std::swap(f.elf.elf, f.dwarf_file.elf);
			}
		} else {
			f.dwarf_file.close();
		}
	}
	// The debug link: beside the file, in its .debug/, under the debug
	// directory; the CRC must match.
	bool by_link = false;
	if (!f.dwarf && !id_.debug_link.empty() && id_.debug_link.find('/') == std::string::npos) {
		const std::string bin_dir = dir_of(id_.path);
		for (const std::string &p :
		     {join_path(bin_dir, id_.debug_link), join_path(join_path(bin_dir, ".debug"), id_.debug_link),
		      join_path(join_path(dir, bin_dir), id_.debug_link)}) {
			uint32_t crc = 0;
			if (!f.dwarf_file.open(p).empty() || !file_crc(f.dwarf_file.fd, crc) ||
			    crc != id_.debug_link_crc) {
				f.dwarf_file.close();
				continue;
			}
			f.dwarf = dwarf_of(f.dwarf_file.elf);
			if (f.dwarf) {
				by_link = true;
				break;
			}
			f.dwarf_file.close();
		}
	}
	f.usable = !has_id || path_ok || by_id || by_link;
	if (!f.usable)
		f.problem += "; no debug file for its build-id under " + dir;
	else if (!path_ok && (by_id || by_link))
		f.problem.clear(); // a debug file stands in for it
}

bool ObjectFile::usable()
{
	if (!files_)
		open();
	return files_->usable;
}

const std::string &ObjectFile::problem()
{
	if (!files_)
		open();
	return files_->problem;
}

const ObjectFile::Names &ObjectFile::names(uint64_t addr)
{
	if (!files_)
		open();
	if (auto hit = cache_.find(addr); hit != cache_.end())
		return hit->second;
	if (cache_.size() >= kMaxCachedAddresses)
		cache_.clear();
	return cache_.emplace(addr, look_up(addr)).first->second;
}

namespace {

// The DIEs directly under a compile unit, in order.
template <class F>
void for_each_top_die(Dwarf_Die &cu_die, F &&f)
{
	Dwarf_Die d;
	if (dwarf_child(&cu_die, &d) != 0)
		return;
	do {
		if (!f(d))
			return;
	} while (dwarf_siblingof(&d, &d) == 0);
}

// The compile units' DIEs, in order, while f returns true.
template <class F>
void for_each_cu(Dwarf *dw, F &&f)
{
	Dwarf_Off off = 0, next = 0;
	size_t header = 0;
	while (dwarf_nextcu(dw, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
		Dwarf_Die cu_die;
		if (dwarf_offdie(dw, off + header, &cu_die) && !f(cu_die))
			return;
		off = next;
	}
}

// The function holding addr: the first top-level subprogram of a compile
// unit whose ranges hold it. "" when none, or when its name or low pc cannot
// be read (babeltrace2 then shows none).
std::string dwarf_function(Dwarf *dw, uint64_t addr)
{
	std::string name;
	bool done = false;
	for_each_cu(dw, [&](Dwarf_Die &cu_die) {
		for_each_top_die(cu_die, [&](Dwarf_Die &d) {
			const int tag = dwarf_tag(&d);
			if (tag == DW_TAG_invalid) {
				done = true;
				return false;
			}
			if (tag != DW_TAG_subprogram)
				return true;
			const int has = dwarf_haspc(&d, addr);
			if (has == 0)
				return true;
			done = true;
			Dwarf_Addr low = 0;
			const char *n = has > 0 ? dwarf_diename(&d) : nullptr;
			if (n && dwarf_lowpc(&d, &low) == 0)
				name = with_offset(n, addr - low);
			return false;
		});
		return !done;
	});
	return name;
}

enum class Found { no, yes, error };

// The inlined subroutine holding addr under a subprogram that holds it, as
// babeltrace2 walks it (a nested DIE's first child is passed over).
Found inlined_at(Dwarf_Die &sub, uint64_t addr, Dwarf_Die &out)
{
	Dwarf_Die d;
	if (dwarf_child(&sub, &d) != 0)
		return Found::error;
	for (;;) {
		const int has = dwarf_haspc(&d, addr);
		if (has < 0)
			return Found::error;
		if (has > 0) {
			const int tag = dwarf_tag(&d);
			if (tag == DW_TAG_invalid)
				return Found::error;
			if (tag == DW_TAG_inlined_subroutine) {
				out = d;
				return Found::yes;
			}
			if (dwarf_haschildren(&d) > 0) {
				Dwarf_Die c;
				if (dwarf_child(&d, &c) != 0)
					return Found::error;
				d = c;
			}
		}
		Dwarf_Die next;
		if (dwarf_siblingof(&d, &next) != 0)
			return Found::no;
		d = next;
	}
}

// The call site of an inlined subroutine (its call file and line).
bool call_site(Dwarf_Die &cu_die, Dwarf_Die &inl, std::string &file, uint64_t &line)
{
	Dwarf_Attribute a;
	Dwarf_Sword file_no = 0;
	if (!dwarf_attr(&inl, DW_AT_call_file, &a) || dwarf_formsdata(&a, &file_no) != 0)
		return false;
	Dwarf_Files *files = nullptr;
	if (dwarf_getsrcfiles(&cu_die, &files, nullptr) != 0 || file_no < 0)
		return false;
	const char *name = dwarf_filesrc(files, static_cast<size_t>(file_no), nullptr, nullptr);
	Dwarf_Word l = 0;
	if (!name || !dwarf_attr(&inl, DW_AT_call_line, &a) || dwarf_formudata(&a, &l) != 0)
		return false;
	file = name;
	line = l;
	return true;
}

// The source of addr: an inlined call site holding it, else the line table
// row starting at it, the compile units in order (file left empty when
// none). An error reading the DWARF ends the search with no source, as in
// babeltrace2.
void dwarf_source(Dwarf *dw, uint64_t addr, std::string &file, uint64_t &line)
{
	for_each_cu(dw, [&](Dwarf_Die &cu_die) {
		Found inl = Found::no;
		Dwarf_Die site;
		for_each_top_die(cu_die, [&](Dwarf_Die &d) {
			const int tag = dwarf_tag(&d);
			if (tag == DW_TAG_invalid) {
				inl = Found::error;
				return false;
			}
			if (tag != DW_TAG_subprogram)
				return true;
			const int has = dwarf_haspc(&d, addr);
			if (has < 0)
				inl = Found::error;
			else if (has > 0)
				inl = inlined_at(d, addr, site);
			return has == 0;
		});
		if (inl == Found::error)
			return false;
		if (inl == Found::yes) {
			if (!call_site(cu_die, site, file, line))
				file.clear();
			return false;
		}
		Dwarf_Line *row = dwarf_getsrc_die(&cu_die, addr);
		if (!row)
			return true;
		Dwarf_Addr at = 0;
		const char *name = nullptr;
		if (dwarf_lineaddr(row, &at) != 0 || !(name = dwarf_linesrc(row, nullptr, nullptr)))
			return false;
		if (at != addr)
			return true;
		int n = 0;
		if (dwarf_lineno(row, &n) == 0) {
			file = name;
			line = static_cast<uint64_t>(n);
		}
		return false;
	});
}

} // namespace

ObjectFile::Names ObjectFile::look_up(uint64_t addr)
{
	Files &f = *files_;
	Names n;
	if (!f.usable)
		return n;
	if (f.dwarf) {
		n.function = dwarf_function(f.dwarf, addr);
		dwarf_source(f.dwarf, addr, n.source, n.line);
		if (!n.function.empty())
			return n;
		// No function there in DWARF (clang's objects have no .debug_aranges
		// to find it by): the symbol table names it.
	}
	if (!f.elf.elf)
		return n;
	if (!f.symtabs_read) {
		f.symtabs_read = true;
		Elf_Scn *scn = nullptr;
		while ((scn = elf_nextscn(f.elf.elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0)
				continue;
			Elf_Data *data = elf_getdata(scn, nullptr);
			if (!data)
				continue;
			Files::Symtab &t = f.symtabs.emplace_back();
			t.strtab = sh.sh_link;
			const uint64_t count = sh.sh_size / sh.sh_entsize;
			for (uint64_t i = 0; i < count; ++i) {
				GElf_Sym s;
				if (!gelf_getsym(data, static_cast<int>(std::min<uint64_t>(i, INT32_MAX)), &s)) {
					t.functions.clear(); // (babeltrace2 gives up on the whole table)
					break;
				}
				if (GELF_ST_TYPE(s.st_info) != STT_FUNC)
					continue;
				const char *name = elf_strptr(f.elf.elf, sh.sh_link, s.st_name);
				t.functions.emplace_back(s.st_value, name);
			}
			std::stable_sort(t.functions.begin(), t.functions.end(),
			                 [](const auto &a, const auto &b) { return a.first < b.first; });
		}
	}
	for (const Files::Symtab &t : f.symtabs) {
		auto at = std::upper_bound(t.functions.begin(), t.functions.end(), addr,
		                           [](uint64_t a, const auto &e) { return a < e.first; });
		if (at == t.functions.begin())
			continue;
		const uint64_t value = std::prev(at)->first;
		at = std::lower_bound(t.functions.begin(), at, value,
		                      [](const auto &e, uint64_t v) { return e.first < v; });
		if (at->second)
			n.function = with_offset(at->second, addr - value);
		break;
	}
	return n;
}

std::string_view file_name_of(std::string_view path)
{
	if (path.empty() || path.back() == '/')
		return path;
	const size_t slash = path.rfind('/');
	return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string build_id_hex(const std::vector<uint8_t> &build_id)
{
	static constexpr char kHex[] = "0123456789abcdef";
	std::string s;
	s.reserve(build_id.size() * 2);
	for (const uint8_t b : build_id) {
		s += kHex[b >> 4];
		s += kHex[b & 15];
	}
	return s;
}

} // namespace tracery::analysis
