// analysis/model/symbols.cpp — each process's objects over time and the names
// of its addresses (see symbols.hpp).
#include "analysis/model/symbols.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace tracery::analysis {

SymbolResolver::SymbolResolver(SymbolOptions options) : options_(std::move(options)) {}

SymbolResolver::~SymbolResolver() = default;

SymbolResolver::Process *SymbolResolver::process(int64_t vpid, bool create)
{
	if (auto at = processes_.find(vpid); at != processes_.end())
		return &at->second;
	if (!create)
		return nullptr;
	if (processes_.size() >= kMaxProcesses) {
		++dropped_.processes;
		return nullptr;
	}
	return &processes_[vpid];
}

SymbolResolver::Mapping *SymbolResolver::mapping(int64_t vpid, uint64_t baddr)
{
	Process *p = process(vpid, false);
	if (!p) {
		++dropped_.orphans;
		return nullptr;
	}
	auto at = p->by_base.find(baddr);
	if (at == p->by_base.end()) {
		++dropped_.orphans;
		return nullptr;
	}
	changed(*p);
	return &at->second;
}

void SymbolResolver::start_dump(int64_t vpid)
{
	if (Process *p = process(vpid, false)) {
		p->by_base.clear();
		changed(*p);
	}
}

void SymbolResolver::load(int64_t vpid, uint64_t baddr, uint64_t memsz, std::string_view path, bool is_pic)
{
	if (memsz == 0)
		return; // the vDSO
	if (path.size() > kMaxPathBytes || memsz > UINT64_MAX - baddr) {
		++dropped_.bad;
		return;
	}
	Process *p = process(vpid, true);
	if (!p)
		return;
	auto at = p->by_base.find(baddr);
	if (at != p->by_base.end() && at->second.id.path == path && at->second.end == baddr + memsz)
		return;
	if (at == p->by_base.end() && p->by_base.size() >= kMaxObjects) {
		++dropped_.objects;
		return;
	}
	Mapping &m = p->by_base[baddr];
	m = Mapping{};
	m.baddr = baddr;
	m.end = baddr + memsz;
	m.is_pic = is_pic;
	m.serial = ++serial_;
	m.id.path = path;
	changed(*p);
}

void SymbolResolver::set_build_id(int64_t vpid, uint64_t baddr, std::span<const uint8_t> build_id)
{
	if (build_id.empty() || build_id.size() > kMaxBuildIdBytes) {
		++dropped_.bad;
		return;
	}
	if (Mapping *m = mapping(vpid, baddr)) {
		m->id.build_id.assign(build_id.begin(), build_id.end());
		m->file = nullptr;
	}
}

void SymbolResolver::set_debug_link(int64_t vpid, uint64_t baddr, std::string_view filename, uint32_t crc)
{
	if (filename.size() > kMaxPathBytes) {
		++dropped_.bad;
		return;
	}
	if (Mapping *m = mapping(vpid, baddr)) {
		m->id.debug_link = filename;
		m->id.debug_link_crc = crc;
		m->file = nullptr;
	}
}

void SymbolResolver::unload(int64_t vpid, uint64_t baddr)
{
	// (LTTng-UST tells an unload twice, lttng_ust_dl:dlclose and
	// lttng_ust_lib:unload: one of nothing is no loss)
	Process *p = process(vpid, false);
	if (p && p->by_base.erase(baddr) != 0)
		changed(*p);
}

ObjectFile &SymbolResolver::file_of(Mapping &m)
{
	if (m.file && m.files_generation == files_generation_)
		return *m.file;
	ObjectFile *found = nullptr;
	for (const auto &f : files_)
		if (f->identity() == m.id) {
			found = f.get();
			break;
		}
	if (!found) {
		if (files_.size() >= kMaxFiles) {
			files_.clear(); // (every mapping's file is then stale: generation)
			++files_generation_;
		}
		found = files_.emplace_back(std::make_unique<ObjectFile>(m.id, options_.debug_dir)).get();
		if (const std::string &why = found->problem();
		    !why.empty() && problems_.size() < kMaxProblems &&
		    std::find(problems_.begin(), problems_.end(), why) == problems_.end())
			problems_.push_back(why);
	}
	m.file = found;
	m.files_generation = files_generation_;
	return *found;
}

const Symbol *SymbolResolver::resolve(int64_t vpid, uint64_t ip)
{
	Process *p = process(vpid, false);
	if (!p || p->by_base.empty())
		return nullptr;
	if (auto hit = p->cache.find(ip); hit != p->cache.end())
		return &hit->second;
	// The object loaded last among those holding ip (objects may overlap
	// in a hostile trace: all those below ip are looked at, at most
	// kMaxObjects, once per address until the objects change).
	Mapping *best = nullptr;
	for (auto at = p->by_base.upper_bound(ip); at != p->by_base.begin();) {
		Mapping &m = (--at)->second;
		if (ip < m.end && (!best || m.serial > best->serial))
			best = &m;
	}
	if (!best)
		return nullptr;
	Symbol s;
	ObjectFile &f = file_of(*best);
	if (f.usable()) {
		s.path = best->id.path;
		s.offset = best->is_pic ? ip - best->baddr : ip;
		char loc[24];
		snprintf(loc, sizeof loc, best->is_pic ? "+%#" PRIx64 : "@%#" PRIx64, s.offset);
		s.bin = std::string(file_name_of(s.path)) + loc;
		const ObjectFile::Names &n = f.names(s.offset);
		s.func = n.function;
		const size_t plus = n.function.rfind('+');
		s.function = plus == std::string::npos ? n.function : n.function.substr(0, plus);
		if (!n.source.empty()) {
			s.file = n.source;
			s.line = n.line;
			s.src = std::string(file_name_of(n.source)) + ':' + std::to_string(n.line);
		}
	}
	if (p->cache.size() >= kMaxCachedAddresses)
		p->cache.clear();
	return &p->cache.emplace(ip, std::move(s)).first->second;
}

void SymbolResolver::make_room(int64_t vpid, size_t n)
{
	if (Process *p = process(vpid, false); p && p->cache.size() + n > kMaxCachedAddresses)
		p->cache.clear();
}

std::vector<std::string> SymbolResolver::problems() const { return problems_; }

void SymbolResolver::report(FILE *err) const
{
	for (const std::string &p : problems_)
		fprintf(err, "tracery: symbols: %s\n", p.c_str());
	if (dropped_.processes)
		fprintf(err, "tracery: symbols: %" PRIu64 " processes' objects not kept (more than %zu processes)\n",
		        dropped_.processes, kMaxProcesses);
	if (dropped_.objects)
		fprintf(err, "tracery: symbols: %" PRIu64 " objects not kept (more than %zu in a process)\n",
		        dropped_.objects, kMaxObjects);
	if (dropped_.bad)
		fprintf(err,
		        "tracery: symbols: %" PRIu64
		        " events with impossible values ignored (an object past the end of the address space, a build-id or path too long)\n",
		        dropped_.bad);
	if (dropped_.orphans)
		fprintf(err, "tracery: symbols: %" PRIu64 " build_id or debug_link events named an object not loaded\n",
		        dropped_.orphans);
}

} // namespace tracery::analysis
