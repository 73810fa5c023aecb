// kernel/kernel_context.cpp — see kernel_context.hpp.
#include "kernel/kernel_context.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/byte_order.hpp"
#include "base/utf8.hpp"
#include "event/context_table.hpp"
#include "kernel/fields.hpp"

namespace tracery::kernel {

namespace {

constexpr const auto &kNames = event::kKernelContextNames;
static_assert(kNames.size() == kKernelContextCount);
constexpr size_t kFirstNs = static_cast<size_t>(KernelContext::pid_ns);
// /proc/TID/ns/NAME of each namespace context, in the enum's order.
constexpr std::array<const char *, 8> kNsFiles = {"pid", "mnt", "net", "user", "uts", "ipc", "cgroup", "time"};
// Threads kept at most; past it the table starts again from /proc.
constexpr size_t kMaxThreads = 1 << 16;

void set_comm(ThreadInfo &t, std::span<const uint8_t> bytes)
{
	const size_t n =
		std::min(strnlen(reinterpret_cast<const char *>(bytes.data()), bytes.size()), kKernelProcnameSize - 1);
	std::memset(t.comm, 0, sizeof t.comm);
	std::memcpy(t.comm, bytes.data(), n);
	// Sanitized once here, not at each event that carries it.
	base::sanitize_utf8_in_place(reinterpret_cast<uint8_t *>(t.comm), n);
}

int32_t read_i32(const FieldFormat &f, std::span<const uint8_t> payload, int32_t fallback)
{
	uint64_t v = 0;
	return read_integer(f, payload, v) ? static_cast<int32_t>(v) : fallback;
}

uint32_t ns_inode(int32_t tid, const char *ns)
{
	char target[64] = {};
	const std::string path = "/proc/" + std::to_string(tid) + "/ns/" + ns;
	const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
	if (n <= 0)
		return 0;
	// "pid:[4026531836]"
	const char *open = std::strchr(target, '[');
	uint64_t inode = 0;
	if (!open || std::from_chars(open + 1, target + n, inode).ec != std::errc())
		return 0;
	return static_cast<uint32_t>(inode);
}

} // namespace

std::string_view kernel_context_name(KernelContext c) noexcept { return kNames[static_cast<size_t>(c)]; }

std::optional<KernelContext> parse_kernel_context(std::string_view name) noexcept
{
	for (size_t i = 0; i < kNames.size(); ++i)
		if (kNames[i] == name)
			return static_cast<KernelContext>(i);
	return std::nullopt;
}

std::vector<std::string> kernel_context_names() { return {kNames.begin(), kNames.end()}; }

std::string kernel_context_tsdl(std::span<const KernelContext> contexts)
{
	if (contexts.empty())
		return "";
	std::string m = "\tevent.context := struct {\n";
	for (const KernelContext c : contexts) {
		// (built by appending: GCC 12 at -O3 warns of "_" + std::string, -Wrestrict)
		std::string name(1, '_');
		name.append(kernel_context_name(c));
		if (c == KernelContext::procname)
			m += "\t\tinteger { size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; } " + name +
			     "[" + std::to_string(kKernelProcnameSize) + "];\n";
		else if (static_cast<size_t>(c) >= kFirstNs)
			m += "\t\tinteger { size = 32; align = 8; signed = 0; encoding = none; base = 10; } " + name +
			     ";\n";
		else
			m += "\t\tinteger { size = 32; align = 8; signed = 1; encoding = none; base = 10; } " + name +
			     ";\n";
	}
	m += "\t};\n";
	return m;
}

bool needs_thread_table(std::span<const KernelContext> contexts) noexcept
{
	return std::any_of(contexts.begin(), contexts.end(), [](KernelContext c) { return c != KernelContext::tid; });
}

std::vector<std::pair<std::string, std::string>> thread_table_events()
{
	return {{"sched", "sched_process_exec"}, {"sched", "sched_process_fork"}, {"task", "task_rename"}};
}

bool read_proc_thread(int32_t tid, bool with_ns, ThreadInfo &out)
{
	const std::string dir = "/proc/" + std::to_string(tid);
	std::string stat, status;
	{
		std::ifstream in(dir + "/stat");
		if (!std::getline(in, stat))
			return false;
	}
	// "TID (COMM) S PPID PGRP ... PRIORITY(18th) ..." where COMM may hold
	// spaces and parentheses.
	const size_t open = stat.find('('), close = stat.rfind(')');
	if (open == std::string::npos || close == std::string::npos || close < open)
		return false;
	ThreadInfo t;
	const std::string comm = stat.substr(open + 1, close - open - 1);
	set_comm(t, {reinterpret_cast<const uint8_t *>(comm.data()), comm.size()});
	std::istringstream rest(stat.substr(close + 1));
	std::vector<std::string> f; // f[0] is field 3 (state)
	for (std::string w; f.size() < 16 && rest >> w;)
		f.push_back(w);
	if (f.size() < 16)
		return false;
	t.ppid = static_cast<int32_t>(std::strtol(f[1].c_str(), nullptr, 10));
	t.prio = static_cast<int32_t>(std::strtol(f[15].c_str(), nullptr, 10));
	std::ifstream st(dir + "/status");
	t.pid = tid;
	for (std::string line; std::getline(st, line);)
		if (line.starts_with("Tgid:")) {
			t.pid = static_cast<int32_t>(std::strtol(line.c_str() + 5, nullptr, 10));
			break;
		}
	if (with_ns)
		for (size_t i = 0; i < kNsFiles.size(); ++i)
			t.ns[i] = ns_inode(tid, kNsFiles[i]);
	out = t;
	return true;
}

ThreadUpdate ThreadUpdate::of(const EventFormat &format)
{
	ThreadUpdate u;
	const auto take = [&](Kind kind, std::initializer_list<const char *> names) {
		FieldFormat *slots[] = {&u.a, &u.b, &u.c, &u.d, &u.e};
		size_t i = 0;
		for (const char *name : names) {
			const FieldFormat *f = format.field(name);
			if (!f)
				return;
			*slots[i++] = *f;
		}
		u.kind = kind;
	};
	if (format.system == "sched" && format.name == "sched_process_fork")
		take(fork, {"child_pid", "child_comm", "parent_pid"});
	else if (format.system == "sched" && format.name == "sched_process_exec")
		take(exec, {"pid", "old_pid", "filename"});
	else if (format.system == "task" && format.name == "task_rename")
		take(rename, {"pid", "newcomm"});
	else if (format.system == "sched" && format.name == "sched_switch")
		take(sched_switch, {"prev_pid", "prev_prio", "next_pid", "next_prio", "prev_comm"});
	return u;
}

ThreadInfo &ThreadTable::slot(int32_t tid)
{
	if (const auto it = threads_.find(tid); it != threads_.end())
		return it->second;
	if (threads_.size() >= kMaxThreads)
		threads_.clear();
	ThreadInfo t;
	if (!read_(tid, with_ns_, t)) {
		t = ThreadInfo{};
		t.pid = tid;
	}
	return threads_.emplace(tid, t).first->second;
}

const ThreadInfo &ThreadTable::get(int32_t tid) { return slot(tid); }

void ThreadTable::update(const ThreadUpdate &u, std::span<const uint8_t> payload)
{
	switch (u.kind) {
	case ThreadUpdate::none:
		return;
	case ThreadUpdate::fork: {
		const int32_t child = read_i32(u.a, payload, 0), parent = read_i32(u.c, payload, 0);
		if (child <= 0)
			return;
		threads_.erase(child); // a tid used again
		ThreadInfo t;
		if (!read_(child, with_ns_, t)) {
			// Gone already: a process of its own (a thread's process is
			// not told by the event), the parent's priority and namespaces.
			const ThreadInfo p = slot(parent);
			t = p;
			t.pid = child;
			t.ppid = p.pid;
			set_comm(t, field_bytes(u.b, payload));
		}
		if (threads_.size() >= kMaxThreads)
			threads_.clear();
		threads_[child] = t;
		return;
	}
	case ThreadUpdate::exec: {
		const int32_t pid = read_i32(u.a, payload, 0), old_pid = read_i32(u.b, payload, pid);
		if (pid <= 0)
			return;
		if (old_pid != pid) { // a thread's exec: it takes the leader's tid
			const auto it = threads_.find(old_pid);
			if (it != threads_.end()) {
				threads_[pid] = it->second;
				threads_.erase(old_pid);
			}
		}
		// The kernel's name after exec: the file's base name, cut to 15 bytes.
		std::span<const uint8_t> file = field_bytes(u.c, payload);
		file = file.first(strnlen(reinterpret_cast<const char *>(file.data()), file.size()));
		const auto slash = std::find(file.rbegin(), file.rend(), '/');
		set_comm(slot(pid), file.subspan(static_cast<size_t>(file.rend() - slash)));
		return;
	}
	case ThreadUpdate::rename:
		if (const int32_t pid = read_i32(u.a, payload, 0); pid > 0)
			set_comm(slot(pid), field_bytes(u.b, payload));
		return;
	case ThreadUpdate::sched_switch: {
		// The task switched out is the context of this event: one not seen
		// yet is entered now, from /proc while it lives, else from the
		// event itself (its name and priority), so a task that exits before
		// its reader gets here keeps the name the kernel gave it.
		if (const int32_t prev = read_i32(u.a, payload, 0); prev > 0 && !threads_.contains(prev)) {
			ThreadInfo t;
			if (!read_(prev, with_ns_, t)) {
				t = ThreadInfo{};
				t.pid = prev;
				set_comm(t, field_bytes(u.e, payload));
			}
			if (threads_.size() >= kMaxThreads)
				threads_.clear();
			threads_.emplace(prev, t);
		}
		// The next task only when already known: the idle task and threads
		// of no event keep no entry.
		for (const auto &[tid_field, prio_field] : {std::pair{&u.a, &u.b}, std::pair{&u.c, &u.d}}) {
			const auto it = threads_.find(read_i32(*tid_field, payload, 0));
			if (it != threads_.end())
				it->second.prio = read_i32(*prio_field, payload, it->second.prio + 100) - 100;
		}
		return;
	}
	}
}

void put_kernel_context(std::vector<uint8_t> &out, std::span<const KernelContext> contexts, int32_t tid,
                        ThreadTable *table)
{
	const ThreadInfo *t = nullptr;
	for (const KernelContext c : contexts) {
		if (c != KernelContext::tid && !t)
			t = &table->get(tid);
		uint8_t word[4];
		switch (c) {
		case KernelContext::tid:
			base::store_le<int32_t>(word, tid);
			break;
		case KernelContext::pid:
			base::store_le<int32_t>(word, t->pid);
			break;
		case KernelContext::ppid:
			base::store_le<int32_t>(word, t->ppid);
			break;
		case KernelContext::prio:
			base::store_le<int32_t>(word, t->prio);
			break;
		case KernelContext::procname: {
			out.insert(out.end(), t->comm, t->comm + kKernelProcnameSize); // sanitized by set_comm()
			continue;
		}
		default:
			base::store_le<uint32_t>(word, t->ns[static_cast<size_t>(c) - kFirstNs]);
			break;
		}
		out.insert(out.end(), word, word + 4);
	}
}

} // namespace tracery::kernel
