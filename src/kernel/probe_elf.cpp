// kernel/probe_elf.cpp — an ELF file read as hostile input for the probe
// resolver (probe_elf.hpp), and its separate debug file found by build-id
// or .gnu_debuglink.
#include "kernel/probe_elf.hpp"

#include <elfutils/libdwelf.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace tracery::kernel::probe_detail {

std::string hex(uint64_t v)
{
	std::array<char, 24> buf{};
	const int n = std::snprintf(buf.data(), buf.size(), "0x%llx", static_cast<unsigned long long>(v));
	return std::string(buf.data(), static_cast<size_t>(n));
}

namespace {

void init_libelf()
{
	static std::once_flag once;
	std::call_once(once, [] { elf_version(EV_CURRENT); });
}

const char *elf_error() { return elf_errmsg(-1) ? elf_errmsg(-1) : "unknown libelf error"; }

} // namespace

ElfFile::ElfFile(int fd, std::string path, bool owns_fd, bool debug_file)
	: fd_(fd), owns_fd_(owns_fd), path_(std::move(path))
{
	try {
		struct stat st {};
		if (fstat(fd_, &st) != 0)
			throw ProbeError(cat(path_, ": cannot stat it: ", std::strerror(errno)));
		if (!S_ISREG(st.st_mode))
			throw ProbeError(cat(path_, " is not a regular file, so not an ELF file"));
		size_ = static_cast<uint64_t>(st.st_size);
		if (size_ > kMaxElfFileSize)
			throw ProbeError(cat(path_, " is larger than ", std::to_string(kMaxElfFileSize >> 30),
			                     " GiB: not read"));
		init_libelf();
		// ELF_C_READ: libelf reads with pread what is asked for; a file
		// truncated while we read it gives an error, not a SIGBUS.
		elf_ = elf_begin(fd_, ELF_C_READ, nullptr);
		if (!elf_ || elf_kind(elf_) != ELF_K_ELF)
			throw ProbeError(cat(path_, " is not an ELF file"));
		GElf_Ehdr eh;
		if (!gelf_getehdr(elf_, &eh))
			throw ProbeError(cat(path_, " is not an ELF file (", elf_error(), ")"));
		if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
		    eh.e_machine != EM_X86_64)
			throw ProbeError(cat(path_, " is an ELF file for another machine (e_machine ",
			                     std::to_string(eh.e_machine), "): only x86-64 ELF64 files are probed"));
		if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
			throw ProbeError(cat(path_, " is neither an executable nor a shared library (ELF type ",
			                     std::to_string(eh.e_type), "): probe the linked program"));
		size_t phnum = 0;
		if (!debug_file && elf_getphdrnum(elf_, &phnum) != 0)
			throw ProbeError(cat(path_, ": bad program headers (", elf_error(), ")"));
		if (phnum > kMaxSegments)
			throw ProbeError(cat(path_, ": ", std::to_string(phnum), " program headers, more than ",
			                     std::to_string(kMaxSegments)));
		for (size_t i = 0; !debug_file && i < phnum; ++i) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf_, static_cast<int>(i), &ph))
				throw ProbeError(cat(path_, ": bad program header ", std::to_string(i)));
			if (ph.p_type != PT_LOAD)
				continue;
			// Only the bytes in the file can be probed; a segment
			// claiming bytes beyond the file's end is refused.
			if (ph.p_offset > size_ || ph.p_filesz > size_ - ph.p_offset ||
			    ph.p_vaddr + ph.p_filesz < ph.p_vaddr)
				throw ProbeError(cat(path_, ": load segment ", std::to_string(i),
				                     " lies beyond the end of the file"));
			loads_.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz, (ph.p_flags & PF_X) != 0});
		}
		has_shstrndx_ = elf_getshdrstrndx(elf_, &shstrndx_) == 0;
	} catch (...) {
		if (elf_)
			elf_end(elf_);
		if (owns_fd_)
			close(fd_);
		throw;
	}
}

ElfFile::~ElfFile()
{
	elf_end(elf_);
	if (owns_fd_)
		close(fd_);
}

std::optional<uint64_t> ElfFile::file_offset(uint64_t vaddr, bool exec) const
{
	for (const Segment &s : loads_)
		if ((!exec || s.exec) && vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz)
			return vaddr - s.vaddr + s.offset;
	return std::nullopt;
}

Elf_Scn *ElfFile::section(std::string_view name, GElf_Word type, GElf_Shdr *shdr) const
{
	if (!has_shstrndx_)
		return nullptr;
	Elf_Scn *scn = nullptr;
	for (size_t n = 0; n < kMaxSections && (scn = elf_nextscn(elf_, scn)) != nullptr; ++n) {
		if (!gelf_getshdr(scn, shdr) || (type != SHT_NULL && shdr->sh_type != type))
			continue;
		const char *s = elf_strptr(elf_, shstrndx_, shdr->sh_name);
		if (s && name == s)
			return scn;
	}
	return nullptr;
}

Elf_Scn *ElfFile::section_of_type(GElf_Word type, GElf_Shdr *shdr) const
{
	Elf_Scn *scn = nullptr;
	for (size_t n = 0; n < kMaxSections && (scn = elf_nextscn(elf_, scn)) != nullptr; ++n)
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	return nullptr;
}

Elf_Data *ElfFile::data(Elf_Scn *scn, const GElf_Shdr &shdr, std::string_view what, uint64_t max_bytes) const
{
	if (shdr.sh_type == SHT_NOBITS)
		return nullptr;
	if (shdr.sh_offset > size_ || shdr.sh_size > size_ - shdr.sh_offset)
		throw ProbeError(cat(path_, ": its ", what, " section lies beyond the end of the file"));
	if (shdr.sh_size > max_bytes)
		throw ProbeError(cat(path_, ": its ", what, " section has ", std::to_string(shdr.sh_size),
		                     " bytes, more than ", std::to_string(max_bytes)));
	Elf_Data *d = elf_getdata(scn, nullptr);
	if (!d)
		throw ProbeError(cat(path_, ": cannot read its ", what, " section (", elf_error(), ")"));
	return d;
}

std::string ElfFile::build_id() const
{
	const void *id = nullptr;
	const ssize_t n = dwelf_elf_gnu_build_id(elf_, &id);
	if (n <= 0 || n > 64 || !id)
		return "";
	std::string out;
	const auto *bytes = static_cast<const unsigned char *>(id);
	for (ssize_t i = 0; i < n; ++i) {
		constexpr std::string_view digits = "0123456789abcdef";
		out += digits[bytes[i] >> 4];
		out += digits[bytes[i] & 15];
	}
	return out;
}

std::string ElfFile::dir() const
{
	std::array<char, 4096> buf{};
	const std::string link = cat("/proc/self/fd/", std::to_string(fd_));
	const ssize_t n = readlink(link.c_str(), buf.data(), buf.size() - 1);
	std::string p = n > 0 && buf[0] == '/' ? std::string(buf.data(), static_cast<size_t>(n)) : path_;
	const size_t slash = p.rfind('/');
	if (slash == std::string::npos)
		return ".";
	return slash == 0 ? std::string("/") : p.substr(0, slash);
}

namespace {

// The CRC-32 of a whole file (what .gnu_debuglink records), or nullopt.
std::optional<uint32_t> file_crc(const ElfFile &f)
{
	std::vector<unsigned char> buf(1 << 16);
	uLong crc = crc32(0L, Z_NULL, 0);
	for (uint64_t off = 0; off < f.size();) {
		const ssize_t n = pread(f.fd(), buf.data(), buf.size(), static_cast<off_t>(off));
		if (n <= 0)
			return std::nullopt;
		crc = crc32(crc, buf.data(), static_cast<uInt>(n));
		off += static_cast<uint64_t>(n);
	}
	return static_cast<uint32_t>(crc);
}

bool same_file(int a, int b)
{
	struct stat sa {
	}, sb{};
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

} // namespace

std::unique_ptr<ElfFile> find_debug_file(const ElfFile &file, std::string *tried)
{
	const std::string id = file.build_id();
	std::vector<std::string> candidates;
	if (id.size() > 2)
		candidates.push_back(cat("/usr/lib/debug/.build-id/", id.substr(0, 2), "/", id.substr(2), ".debug"));
	GElf_Word crc = 0;
	const char *link = dwelf_elf_gnu_debuglink(file.elf(), &crc);
	const std::string_view name = link ? std::string_view(link) : std::string_view();
	const bool link_ok = !name.empty() && name.size() < 256 && name.find('/') == std::string_view::npos &&
	                     name != "." && name != "..";
	if (link_ok) {
		const std::string dir = file.dir();
		const std::string sep = dir == "/" ? "" : "/";
		candidates.push_back(cat(dir, sep, name));
		candidates.push_back(cat(dir, sep, ".debug/", name));
		candidates.push_back(cat("/usr/lib/debug", dir, sep, name));
	}
	for (const std::string &c : candidates) {
		if (!tried->empty())
			*tried += ", ";
		*tried += c;
		// O_NONBLOCK: a FIFO put in the way does not hang us.
		const int fd = open(c.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			continue;
		if (same_file(fd, file.fd())) {
			close(fd);
			continue;
		}
		std::unique_ptr<ElfFile> debug;
		try {
			debug = std::make_unique<ElfFile>(fd, c, true, true);
		} catch (const ProbeError &) {
			continue;
		}
		const std::string debug_id = debug->build_id();
		if (!id.empty() ? debug_id == id : (link_ok && file_crc(*debug) == crc))
			return debug;
	}
	return nullptr;
}

} // namespace tracery::kernel::probe_detail
