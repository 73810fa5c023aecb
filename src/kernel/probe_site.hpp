// kernel/probe_site.hpp — dynamic probes on unmodified programs:
// a --userspace-probe spec resolved, from the ELF file it names, into what
// one line of tracefs's uprobe_events needs (the probed instruction's file
// offset, the SDT semaphore's, the fetch-args that record the arguments).
// Pure: it reads the file it is given and writes nothing; uprobe_events
// itself is written by its caller.
//
//   elf:PATH:SYMBOL[+OFFSET]   a function's entry (or OFFSET bytes into it)
//   elf:PATH:SYMBOL%return     its return: records the value returned
//   sdt:PATH:PROVIDER:NAME     a <sys/sdt.h> probe point (.note.stapsdt)
//
// Where the values come from:
//   - Symbols from .symtab, else .dynsym (libelf); a stripped file's symbols
//     from its separate debug file when one is found (see below). Only
//     STT_FUNC: an IFUNC's symbol is its resolver, refused with that reason.
//   - offset = st_value - p_vaddr + p_offset of the executable PT_LOAD
//     segment whose file bytes hold st_value (+OFFSET, which must stay
//     inside st_size; it must also be an instruction boundary, which is not
//     checked: there is no disassembler here).
//   - Arguments at a function's entry (OFFSET 0) from DWARF (libdw): the
//     DW_TAG_subprogram whose entry address is the symbol's (the address,
//     not the name, decides: a static function's name may be in several
//     units, a C++ one is mangled), its formal parameters in order, placed
//     by the x86-64 SysV calling convention: integer-class parameters
//     (integers up to 8 bytes, _Bool, enums, pointers, references) in %di
//     %si %dx %cx %r8 %r9, then in the 8-byte stack slots +8(%sp),
//     +16(%sp)... above the return address; float and double are in xmm
//     registers, which uprobes cannot read: skipped (a note; they take no
//     integer register, a stack slot after the 8th); a struct, union,
//     __int128 or long double by value, or `...`, ends the list (a note:
//     classifying them is beyond this). `char *` (a pointer to a 1-byte
//     character type, any qualifiers) is fetched as a string ("+0(%di)").
//     Return probes: "ret" = $retval typed from the return type (a char *
//     as "+0($retval)":string, which this kernel accepts).
//     DWARF is looked for in the file, else in a separate debug file:
//     /usr/lib/debug/.build-id/NN/REST.debug by the GNU build-id, then the
//     .gnu_debuglink name in the file's directory, its .debug/ and
//     /usr/lib/debug/DIR/; a candidate must have the same build-id (or,
//     without one, the debuglink's CRC). Debug files are opened with the
//     calling thread's credentials: a daemon resolving for a user should
//     call with that user's filesystem ids.
//   - SDT: the notes of type 3 owned by "stapsdt" in .note.stapsdt: pc,
//     base, semaphore, "provider\0name\0operands\0". A file prelinked to
//     another address has a .stapsdt.base section whose address differs
//     from the base the note recorded: pc and semaphore then move by
//     (.stapsdt.base's sh_addr - note base). Both become file offsets
//     through the PT_LOAD segment holding them (the semaphore is in the
//     .probes section of a data segment). Operands "[-]SIZE@OP" become
//     arg1..argN: see parse_sdt_operands().
//
// Every file is hostile input: it is read with pread (ELF_C_READ: a file
// truncated under us cannot fault a mapping), every table and walk is
// bounded (kMax* below), absurd sizes are refused, and every failure is a
// ProbeError of one line naming the file and what to do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::kernel {

class ProbeError : public std::runtime_error {
public:
	// position: for parse_user_args(), the byte offset of the bad part in
	// the --args text (the message shows the text with a caret under it);
	// npos otherwise.
	explicit ProbeError(const std::string &message, size_t position = std::string::npos)
		: std::runtime_error(message), position_(position)
	{
	}
	size_t position() const { return position_; }

private:
	size_t position_;
};

struct ProbeArg {
	std::string name;   // a C identifier: the event's field name
	std::string fetch;  // uprobe fetch-arg: "%di", "+8(%si)", "+0(+16(%sp))", "$retval", "\\5"
	std::string type;   // uprobe type: s8..s64, u8..u64, x8..x64, string
	std::string c_type; // for status and docs: "int", "const char *", "enum color", "_Bool", "int32_t"
};

struct ProbeSpec {
	enum class Kind { function, function_return, sdt };
	Kind kind = Kind::function;
	std::string path;
	std::string symbol;         // function kinds
	uint64_t symbol_offset = 0; // function: +OFFSET
	std::string provider, name; // sdt
};

// "elf:/bin/bash:readline%return", "elf:./a.out:f+4", "elf:./a.out:f+0x10",
// "sdt:/usr/bin/python3.11:python:function__entry". PATH is everything
// between the first ':' and the last (sdt: the last two), so it may hold
// ':' itself. Throws ProbeError naming the expected forms otherwise.
ProbeSpec parse_probe_spec(std::string_view text);

struct ProbeSite {
	std::string path;               // the ELF file as given (the caller names it to the kernel)
	uint64_t offset = 0;            // file offset of the probed instruction
	uint64_t ref_ctr_offset = 0;    // SDT semaphore's file offset ("PATH:OFFSET(REF_CTR_OFFSET)"), 0 if none
	std::vector<ProbeArg> args;     // what to record, in order
	std::string args_source;        // "DWARF", "DWARF from /usr/lib/debug/...", "--args", "SDT note",
					// "none (...: address only)"
	std::vector<std::string> notes; // what was not recorded and why ("x (double): in an xmm register...")
};

// The probe sites of `spec` in the ELF file open at `fd` (the daemon opens
// spec.path with the requesting user's credentials; `fd` is not closed and
// its file position is not used). Function probes give one site; an SDT
// probe one per note of that provider:name (a probe point in an inlined
// function or a macro used twice has several), in note order.
// `user_args`: the --args value ("" if none) which, when given, replaces
// DWARF's and the SDT note's arguments; "$retval" only in return probes.
// Throws ProbeError.
std::vector<ProbeSite> resolve_probe(int fd, const ProbeSpec &spec, std::string_view user_args);

// --args 'name=FETCH:TYPE,...': FETCH is %REG (x86-64 registers by their
// uprobe names: %ax %bx %cx %dx %si %di %bp %sp %r8..%r15 %ip), $retval,
// $stackN, $argN (an SDT probe's operand N, wherever its note says it is
// at each site: resolve_probe() puts that fetch-arg in its place, e.g.
// "+0($arg1):string" for an operand that points to a string), \IMM (a
// constant), or [+-]OFF(FETCH) (a dereference, nested at
// most kMaxDerefDepth deep; OFF decimal or 0x hex, |OFF| < 2^31); TYPE as
// in ProbeArg, a string only through a dereference. Names are unique C
// identifiers of at most 31 characters, not "common_*" nor "__probe*"
// (the kernel's own fields). c_type is left empty. Throws ProbeError
// whose message holds the text with a caret (^) under the bad part.
std::vector<ProbeArg> parse_user_args(std::string_view spec);

// `args` as text: "name=FETCH:TYPE" joined by `separator`: ',' gives an
// --args value that parse_user_args() reads back, ' ' the arguments of a
// uprobe_events line.
std::string args_text(const std::vector<ProbeArg> &args, char separator);

// An SDT note's operand string, e.g. "-4@%edi 8@%rax -4@-20(%rbp) 8@8(%rsp)
// 4@$5 -8@%r12", as fetch-args named arg1..argN by position. SIZE (1, 2, 4,
// 8; negative: signed) gives the type (s8..s64, u8..u64); registers of any
// width name their 64-bit register (%edi, %di, %dil -> %di; %r12d -> %r12;
// the value is the register's low bytes, which the type reads); OFF(%reg)
// -> +OFF(%reg); $N -> \N. An operand that cannot be said as a fetch-arg
// (an index register, %rip-relative, a segment prefix, an absolute address,
// $symbol, %ah..%dh, a 32-bit base register, an unknown size) is skipped
// with a note naming it: the other arguments keep their numbers. Never
// throws; at most kMaxSdtOperands operands are read.
struct SdtArgs {
	std::vector<ProbeArg> args;
	std::vector<std::string> notes;
};
SdtArgs parse_sdt_operands(std::string_view operands);

// Up to `count` names of `candidates` close to `wanted`, the closest first:
// an edit distance of at most a third of its length (1 to 3), else one of
// 4 or more characters holding the other.
std::vector<std::string> close_names(std::string_view wanted, const std::vector<std::string> &candidates,
                                     size_t count = 3);

// Limits: beyond them a file or a text is refused (or, for SDT operands,
// the rest skipped with a note).
inline constexpr uint64_t kMaxElfFileSize = uint64_t{16} << 30;
inline constexpr size_t kMaxSymbols = 4'000'000;
inline constexpr size_t kMaxSections = 65'536;
inline constexpr size_t kMaxSegments = 4'096;
inline constexpr size_t kMaxSdtNotes = 100'000;
inline constexpr size_t kMaxSdtOperands = 32;
inline constexpr size_t kMaxDwarfUnits = 1'000'000;
inline constexpr size_t kMaxDwarfDies = 20'000'000;
inline constexpr size_t kMaxDwarfDepth = 64;
inline constexpr size_t kMaxProbeArgs = 64;
inline constexpr size_t kMaxDerefDepth = 8;
inline constexpr size_t kMaxUserArgsLength = 4096;

} // namespace tracery::kernel
