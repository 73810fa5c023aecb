// ust/statedump.cpp — the state dump of loaded objects: see statedump.hpp.
// The field lists are LTTng-UST 2.13's (lttng-ust-statedump-provider.h):
// addresses as 64-bit integers shown in hex, flags as 8-bit ones, the
// build-id a blob (a sequence of bytes shown in hex), the process name an
// array of 16 bytes.
#include "ust/statedump.hpp"

#include "base/background_thread.hpp"
#include "base/fd.hpp"
#include "ust/loaded_objects.hpp"

#include <tracery/internal/entry.h>

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <iterator>
#include <mutex>

namespace tracery::ust {
namespace {

constexpr char kProvider[] = "lttng_ust_statedump";
constexpr uint32_t kProcnameLen = 16;

constexpr tracery_field_desc kBinInfoFields[] = {
	{"baddr", TRACERY_TYPE_U64, TRACERY_FIELD_HEX, 0, nullptr},
	{"memsz", TRACERY_TYPE_U64, 0, 0, nullptr},
	{"path", TRACERY_TYPE_STRING, 0, 0, nullptr},
	{"is_pic", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"has_build_id", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"has_debug_link", TRACERY_TYPE_U8, 0, 0, nullptr},
};
constexpr tracery_field_desc kBuildIdFields[] = {
	{"baddr", TRACERY_TYPE_U64, TRACERY_FIELD_HEX, 0, nullptr},
	{"build_id", TRACERY_TYPE_BLOB, 0, 0, nullptr},
};
constexpr tracery_field_desc kDebugLinkFields[] = {
	{"baddr", TRACERY_TYPE_U64, TRACERY_FIELD_HEX, 0, nullptr},
	{"crc", TRACERY_TYPE_U32, 0, 0, nullptr},
	{"filename", TRACERY_TYPE_STRING, 0, 0, nullptr},
};
constexpr tracery_field_desc kProcnameFields[] = {
	{"procname", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U8, kProcnameLen, nullptr},
};

// Constant-initialized (constinit): the library's constructor registers them
// before any dynamic initializer of this file would have run.
constexpr tracery_event_desc make_desc(const char *name, const tracery_field_desc *fields, uint32_t count)
{
	return {kProvider, name, fields, count, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
}

constinit tracery_event_desc start_event = make_desc("start", nullptr, 0);
constinit tracery_event_desc bin_info_event = make_desc("bin_info", kBinInfoFields, std::size(kBinInfoFields));
constinit tracery_event_desc build_id_event = make_desc("build_id", kBuildIdFields, std::size(kBuildIdFields));
constinit tracery_event_desc debug_link_event = make_desc("debug_link", kDebugLinkFields, std::size(kDebugLinkFields));
constinit tracery_event_desc procname_event = make_desc("procname", kProcnameFields, std::size(kProcnameFields));
constinit tracery_event_desc end_event = make_desc("end", nullptr, 0);

tracery_event_desc *const all_events[] = {&start_event,      &bin_info_event, &build_id_event,
                                          &debug_link_event, &procname_event, &end_event};

bool enabled(const tracery_event_desc &desc) { return __atomic_load_n(&desc.enabled, __ATOMIC_RELAXED); }

void emit(tracery_event_desc &desc, const tracery_arg *args)
{
	if (enabled(desc))
		tracery_fire(&desc, args);
}

// The process's name as the kernel has it (the main thread's, which the
// library's own threads do not share), NUL-padded to 16 bytes.
void read_procname(uint8_t (&name)[kProcnameLen])
{
	memset(name, 0, sizeof name);
	const base::Fd fd(open("/proc/self/comm", O_RDONLY | O_CLOEXEC));
	if (!fd)
		return;
	const ssize_t n = read(fd.get(), name, sizeof name);
	for (ssize_t i = 0; i < n; ++i)
		if (name[i] == '\n')
			name[i] = 0;
}

void emit_object(const LoadedObject &o)
{
	const uint8_t is_pic = o.is_pic, has_build_id = !o.build_id.empty(), has_debug_link = o.has_debug_link;
	const tracery_arg bin_info[] = {
		{&o.baddr, 0}, {&o.memsz, 0},      {o.path.c_str(), static_cast<uint32_t>(o.path.size())},
		{&is_pic, 0},  {&has_build_id, 0}, {&has_debug_link, 0}};
	emit(bin_info_event, bin_info);
	if (has_build_id) {
		const tracery_arg build_id[] = {{&o.baddr, 0},
		                                {o.build_id.data(), static_cast<uint32_t>(o.build_id.size())}};
		emit(build_id_event, build_id);
	}
	if (has_debug_link) {
		const tracery_arg debug_link[] = {{&o.baddr, 0},
		                                  {&o.debug_link_crc, 0},
		                                  {o.debug_link.c_str(), static_cast<uint32_t>(o.debug_link.size())}};
		emit(debug_link_event, debug_link);
	}
}

std::mutex statedump_thread_mutex; // two threads may fork at once
pthread_t statedump_thread;
bool statedump_thread_running = false;

void *statedump_thread_main(void *)
{
	pthread_setname_np(pthread_self(), "tracery-dump");
	record_statedump();
	return nullptr;
}

} // namespace

void register_statedump_events() { tracery_register_events(std::begin(all_events), std::end(all_events)); }

bool statedump_enabled()
{
	for (const tracery_event_desc *desc : all_events)
		if (enabled(*desc))
			return true;
	return false;
}

void record_statedump()
{
	if (!statedump_enabled())
		return;
	emit(start_event, nullptr);
	if (enabled(bin_info_event) || enabled(build_id_event) || enabled(debug_link_event))
		for (const LoadedObject &object : loaded_objects())
			emit_object(object);
	uint8_t name[kProcnameLen];
	read_procname(name);
	const tracery_arg procname[] = {{name, kProcnameLen}};
	emit(procname_event, procname);
	emit(end_event, nullptr);
}

void start_statedump_thread()
{
	join_statedump_thread();
	if (!statedump_enabled())
		return;
	// Finished before fork(), holding no lock: a child must not inherit the
	// loader's lock held by a thread it does not have. Registered here, after
	// the clock's and the library's own fork handlers, so that it runs before
	// them (prepare handlers run in the reverse order): the thread may need
	// what they lock.
	static std::once_flag fork_handler_once;
	std::call_once(fork_handler_once, [] { pthread_atfork(join_statedump_thread, nullptr, nullptr); });
	std::lock_guard lock(statedump_thread_mutex);
	statedump_thread_running = base::start_background_thread(statedump_thread, statedump_thread_main, nullptr) == 0;
}

void join_statedump_thread()
{
	std::lock_guard lock(statedump_thread_mutex);
	if (statedump_thread_running)
		pthread_join(statedump_thread, nullptr);
	statedump_thread_running = false;
}

} // namespace tracery::ust
