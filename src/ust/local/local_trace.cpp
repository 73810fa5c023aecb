// Daemonless trace directory and its fork-shared event catalog.
#include "ust/local/local_trace.hpp"

#include "base/diagnostics.hpp"
#include "clock/trace_clock.hpp"

#include <dirent.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace tracery::ust {

namespace {
constexpr uint32_t kMaxEvents = 4096;
constexpr size_t kKeySize = 256;
} // namespace

struct SharedCatalogPage {
	pthread_mutex_t lock;
	uint32_t next_process_index;
	uint32_t count;
	struct Entry {
		char name[kKeySize];
		uint64_t signature;
	} entries[kMaxEvents]; // index == event id
};

namespace {

// Field names and types: two events of one name but different fields (two
// versions of a library, say) get different ids.
uint64_t signature_of(const tracery_event_desc &d)
{
	uint64_t h = 1469598103934665603ull; // FNV-1a
	auto mix = [&h](const void *p, size_t n) {
		for (size_t i = 0; i < n; i++) {
			h ^= static_cast<const unsigned char *>(p)[i];
			h *= 1099511628211ull;
		}
	};
	for (uint32_t i = 0; i < d.nr_fields; i++) {
		const tracery_field_desc &f = d.fields[i];
		mix(f.name, strlen(f.name) + 1);
		mix(&f.type, 1);
		mix(&f.elem_type, 1);
		mix(&f.length, sizeof f.length);
		if (f.enum_desc)
			for (uint32_t e = 0; e < f.enum_desc->nr_entries; e++)
				mix(f.enum_desc->entries[e].label, strlen(f.enum_desc->entries[e].label) + 1);
	}
	return h;
}

class PageLock {
public:
	explicit PageLock(pthread_mutex_t *m) : m_(m)
	{
		if (pthread_mutex_lock(m_) == EOWNERDEAD)
			pthread_mutex_consistent(
				m_); // a process died holding it: the table is append-only, still valid
	}
	~PageLock() { pthread_mutex_unlock(m_); }

private:
	pthread_mutex_t *m_;
};

bool directory_is_empty_or_missing(const std::string &dir)
{
	DIR *d = opendir(dir.c_str());
	if (!d)
		return errno == ENOENT;
	bool empty = true;
	while (dirent *e = readdir(d)) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			empty = false;
			break;
		}
	}
	closedir(d);
	return empty;
}

ctf::TraceDir create_empty_trace_dir(const std::string &path)
{
	if (!directory_is_empty_or_missing(path))
		throw std::runtime_error(
			"TRACERY_OUTPUT='" + path +
			"' is not empty: give a new or empty directory so that no trace is overwritten");
	return ctf::TraceDir::create(path);
}

std::string host_name()
{
	char buf[256] = {};
	gethostname(buf, sizeof buf - 1);
	return buf;
}

} // namespace

LocalTrace::LocalTrace(const DaemonlessConfig &config)
	: filters_(config.filters), uuid_(ctf::Uuid::random()), dir_(create_empty_trace_dir(config.output_dir))
{
	ctf::TraceInfo info;
	info.uuid = uuid_;
	info.hostname = host_name();
	info.clock_scale = clock::tick_scale(tick_unit_);
	ctf::MetadataWriter metadata(info);
	own_metadata_->assign(metadata.preamble() + ctf::MetadataWriter::stream_class(0, config.context));
	dir_.write_metadata(own_metadata_->text());

	void *mem = mmap(nullptr, sizeof(SharedCatalogPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		throw std::runtime_error(std::string("cannot map the event catalog: ") + strerror(errno));
	page_ = static_cast<SharedCatalogPage *>(mem);
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&page_->lock, &attr);
	pthread_mutexattr_destroy(&attr);
}

LocalTrace::~LocalTrace()
{
	if (page_)
		munmap(page_, sizeof(SharedCatalogPage));
}

std::optional<std::vector<filter::Program>> LocalTrace::filters_for(const tracery_event_desc &desc)
{
	std::string error;
	auto programs = compile_filter_rules(filters_, desc, &error);
	if (!programs)
		base::diagnostic("%s", error.c_str());
	return programs;
}

int64_t LocalTrace::id_for(const tracery_event_desc &desc)
{
	std::string name = std::string(desc.provider) + ":" + desc.name;
	if (name.size() >= kKeySize)
		return -1;
	const uint64_t sig = signature_of(desc);
	PageLock lock(&page_->lock);
	uint32_t id = 0;
	while (id < page_->count && !(page_->entries[id].signature == sig && name == page_->entries[id].name))
		id++;
	const std::string event_class = ctf::MetadataWriter::event_class(0, id, desc);
	if (id == page_->count) {
		if (id == kMaxEvents)
			return -1;
		dir_.append_metadata(event_class);
		auto &e = page_->entries[id];
		memcpy(e.name, name.c_str(), name.size() + 1);
		e.signature = sig;
		page_->count = id + 1;
	}
	if (in_own_metadata_.size() <= id)
		in_own_metadata_.resize(id + 1);
	if (!in_own_metadata_[id])
		own_metadata_->append(event_class);
	in_own_metadata_[id] = true;
	return id;
}

uint32_t LocalTrace::claim_process_index()
{
	PageLock lock(&page_->lock);
	return page_->next_process_index++;
}

} // namespace tracery::ust
