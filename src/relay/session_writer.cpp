// relay/session_writer.cpp — one sender's session on disk: directories and
// files created only under the session's own directory (names already
// checked by the decoder, opened relative to directory fds, never following
// a link, never reusing a file), packets appended whole before their index
// entry, so what a vanished sender leaves is whole packets, each indexed.
// Writes go to explicit offsets (pwrite): a file cut back after a failed
// write is written again from where it ends.
#include "relay/session_writer.hpp"

#include "base/cat.hpp"
#include "control/live_protocol.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

namespace tracery::relay {

namespace cr = control::relay;

namespace {

using base::cat;

std::string errno_text() { return std::strerror(errno); }

using control::live::put_be32;
using control::live::put_be64;

// mkdirat then open: the directory fd, or -1 (errno set). An existing
// directory is accepted only when exclusive is false.
int make_dir(int parent, const std::string &name, bool exclusive)
{
	if (::mkdirat(parent, name.c_str(), 0755) != 0 && (exclusive || errno != EEXIST))
		return -1;
	return ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int create_file(int dir, const std::string &name)
{
	return ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

// A new index file's header: 0 or the errno of the write.
int write_index_header(int fd)
{
	uint8_t header[kIndexHeaderSize];
	put_be32(header, kIndexMagic);
	put_be32(header + 4, kIndexMajor);
	put_be32(header + 8, kIndexMinor);
	put_be32(header + 12, kIndexEntrySize);
	return write_all_at(fd, header, sizeof header, 0);
}

int open_index_dir(int trace_dir)
{
	return ::openat(trace_dir, "index", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// One path a prefix (by whole components) of the other, or the same.
bool nested(const std::string &a, const std::string &b)
{
	const std::string &s = a.size() <= b.size() ? a : b;
	const std::string &l = a.size() <= b.size() ? b : a;
	return l.compare(0, s.size(), s) == 0 && (l.size() == s.size() || l[s.size()] == '/');
}

} // namespace

int write_all_at(int fd, const void *buf, size_t size, uint64_t offset)
{
	const auto *p = static_cast<const uint8_t *>(buf);
	while (size > 0) {
		const ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += n;
		size -= static_cast<size_t>(n);
		offset += static_cast<uint64_t>(n);
	}
	return 0;
}

std::string SessionWriter::failed(const std::string &path, const char *what)
{
	const int err = errno;
	disk_refused_ = err == ENOSPC || err == EDQUOT || err == EFBIG || err == EIO;
	return cat(path, ": ", what, " failed: ", std::strerror(err));
}

std::string SessionWriter::apply(const cr::Frame &f, cr::HelloReply *reply)
{
	disk_refused_ = false;
	if (bye_)
		return cat(cr::type_name(static_cast<uint16_t>(cr::type_of(f))), " after BYE");
	if (const auto *h = std::get_if<cr::Hello>(&f))
		return hello(*h, reply);
	if (!said_hello())
		return cat(cr::type_name(static_cast<uint16_t>(cr::type_of(f))), " before HELLO");
	if (const auto *m = std::get_if<cr::Trace>(&f))
		return trace(*m);
	if (const auto *m = std::get_if<cr::Metadata>(&f))
		return metadata(*m);
	if (const auto *m = std::get_if<cr::Stream>(&f))
		return stream(*m);
	if (const auto *m = std::get_if<cr::Packet>(&f))
		return packet(*m);
	if (const auto *m = std::get_if<cr::ArchiveTrace>(&f))
		return archive(*m);
	if (const auto *m = std::get_if<cr::StreamFiles>(&f))
		return stream_files(*m);
	std::string why;
	if (const auto *m = std::get_if<cr::Beacon>(&f))
		return open_stream(m->stream_id, "BEACON", why) ? "" : why; // kept for live; nothing to write yet
	if (const auto *m = std::get_if<cr::CloseStream>(&f)) {
		StreamState *s = open_stream(m->stream_id, "CLOSE_STREAM", why);
		if (!s)
			return why;
		s->closed = true;
		s->data.reset();
		s->index.reset();
		return {};
	}
	if (std::holds_alternative<cr::Bye>(f)) {
		bye_ = true;
		return {};
	}
	if (std::holds_alternative<cr::Sync>(f))
		return {}; // the server answers it: what came before is written
	// HELLO_REPLY, SYNC_REPLY, NOTICE: the relay's own frames.
	return cat(cr::type_name(static_cast<uint16_t>(cr::type_of(f))), " from a sender");
}

std::string SessionWriter::hello(const cr::Hello &m, cr::HelloReply *reply)
{
	if (said_hello())
		return "a second HELLO";
	if (m.major != cr::kMajor) {
		if (reply)
			*reply = {.accepted = false,
			          .text = cat("protocol major ", std::to_string(m.major), ", this relay speaks 1")};
		return cat("HELLO of protocol major ", std::to_string(m.major));
	}
	base::Fd out(::open(output_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!out)
		return cat("output directory ", output_, ": ", errno_text());
	base::Fd host(make_dir(out.get(), m.hostname, false));
	if (!host)
		return cat("directory ", m.hostname, ": ", errno_text());
	// SESSION-YYYYMMDD-HHMMSS of the session's creation (UTC), -N if taken.
	const time_t t = static_cast<time_t>(m.creation_time_ns / 1000000000u);
	struct tm tm {};
	gmtime_r(&t, &tm);
	char date[32];
	strftime(date, sizeof date, "%Y%m%d-%H%M%S", &tm);
	std::string base_name = m.session;
	base_name += '-';
	base_name += date;
	for (int n = 0; n < 1000; n++) {
		std::string name = base_name;
		if (n > 0)
			name += cat("-", std::to_string(n));
		base::Fd dir(make_dir(host.get(), name, true));
		if (dir) {
			session_dir_ = std::move(dir);
			relative_dir_ = cat(m.hostname, "/", name);
			live_ = m.live_period_ns != 0;
			if (reply)
				*reply = {.accepted = true, .text = relative_dir_};
			return {};
		}
		if (errno != EEXIST)
			return cat("directory ", m.hostname, "/", name, ": ", errno_text());
	}
	return cat("1000 sessions named ", base_name, " already");
}

std::string SessionWriter::trace(const cr::Trace &m)
{
	if (traces_.size() >= kMaxTraces)
		return "more than 64 traces in a session";
	if (traces_.count(m.id) || archived_traces_.count(m.id))
		return cat("TRACE id ", std::to_string(m.id), " used twice");
	for (const auto &[id, t] : traces_)
		if (nested(t.path, m.path))
			return cat("TRACE path ", m.path, " inside or around ", t.path);
	TraceState t;
	t.path = m.path;
	base::Fd dir(::dup(session_dir_->get()));
	size_t start = 0;
	while (dir) {
		const size_t slash = m.path.find('/', start);
		const std::string part = m.path.substr(start, slash - start);
		dir.reset(make_dir(dir.get(), part, false));
		if (slash == std::string::npos)
			break;
		start = slash + 1;
	}
	if (!dir)
		return failed(m.path, "mkdir");
	t.metadata.reset(create_file(dir.get(), "metadata"));
	if (!t.metadata)
		return failed(cat(m.path, "/metadata"), "create");
	base::Fd index(make_dir(dir.get(), "index", true));
	if (!index) {
		std::string why = failed(cat(m.path, "/index"), "mkdir");
		::unlinkat(dir.get(), "metadata", 0); // made by this frame: it may come again
		return why;
	}
	t.dir = std::move(dir);
	traces_.emplace(m.id, std::move(t));
	return {};
}

std::string SessionWriter::metadata(const cr::Metadata &m)
{
	const auto it = traces_.find(m.trace_id);
	if (it == traces_.end())
		return cat("METADATA of unknown trace ", std::to_string(m.trace_id));
	TraceState &t = it->second;
	if (m.text.size() > kMaxMetadata - t.metadata_bytes)
		return cat("metadata of trace ", t.path, " over 16 MiB");
	if (const int err = write_all_at(t.metadata.get(), m.text.data(), m.text.size(), t.metadata_bytes)) {
		errno = err;
		std::string why = failed(cat(t.path, "/metadata"), "write");
		[[maybe_unused]] const int rc = ::ftruncate(t.metadata.get(), static_cast<off_t>(t.metadata_bytes));
		return why;
	}
	t.metadata_bytes += m.text.size();
	return {};
}

std::string SessionWriter::stream(const cr::Stream &m)
{
	if (streams_.size() >= kMaxStreams)
		return "more than 4096 streams in a session";
	if (streams_.count(m.id) || archived_streams_.count(m.id))
		return cat("STREAM id ", std::to_string(m.id), " used twice");
	const auto it = traces_.find(m.trace_id);
	if (it == traces_.end())
		return cat("STREAM of unknown trace ", std::to_string(m.trace_id));
	if (m.file == "metadata" || m.file == "index")
		return cat("STREAM named ", m.file);
	const TraceState &t = it->second;
	StreamState s;
	s.trace_id = m.trace_id;
	s.file = m.file;
	s.data.reset(create_file(t.dir.get(), m.file)); // O_EXCL: a name used twice fails here
	if (!s.data)
		return failed(cat(t.path, "/", m.file), "create");
	const std::string index_name = cat(m.file, ".idx");
	base::Fd index_dir(open_index_dir(t.dir.get()));
	if (index_dir)
		s.index.reset(create_file(index_dir.get(), index_name));
	const int err = s.index ? write_index_header(s.index.get()) : errno;
	if (!s.index || err) {
		errno = err;
		std::string why = failed(cat(t.path, "/index/", index_name), s.index ? "write" : "create");
		// What this frame made goes: it may come again.
		::unlinkat(t.dir.get(), m.file.c_str(), 0);
		if (s.index)
			::unlinkat(index_dir.get(), index_name.c_str(), 0);
		return why;
	}
	streams_.emplace(m.id, std::move(s));
	return {};
}

std::string SessionWriter::trace_path(uint32_t id) const
{
	const auto it = traces_.find(id);
	return it == traces_.end() ? std::string() : it->second.path;
}

std::string SessionWriter::stream_path(uint32_t id) const
{
	const auto it = streams_.find(id);
	return it == streams_.end() ? std::string() : cat(trace_path(it->second.trace_id), "/", it->second.file);
}

SessionWriter::StreamState *SessionWriter::open_stream(uint32_t id, const char *what, std::string &why)
{
	const auto it = streams_.find(id);
	if (it == streams_.end()) {
		why = cat(what, " of unknown stream ", std::to_string(id));
		return nullptr;
	}
	if (it->second.closed) {
		why = cat(what, " of closed stream ", std::to_string(id));
		return nullptr;
	}
	return &it->second;
}

std::string SessionWriter::packet(const cr::Packet &m)
{
	std::string why;
	StreamState *s = open_stream(m.stream_id, "PACKET", why);
	if (!s)
		return why;
	if (s->file_size && s->size > 0 && m.bytes.size() > s->file_size - std::min(s->file_size, s->size))
		if (why = next_file(*s); !why.empty())
			return why;
	const std::string &trace_path = traces_.at(s->trace_id).path;
	if (const int err = write_all_at(s->data.get(), m.bytes.data(), m.bytes.size(), s->size)) {
		errno = err;
		why = failed(cat(trace_path, "/", s->file), "write");
		// A packet written in part (a full disk): the file ends at the last whole one.
		[[maybe_unused]] const int rc = ::ftruncate(s->data.get(), static_cast<off_t>(s->size));
		return why;
	}
	const cr::PacketIndex &i = m.index;
	uint8_t entry[kIndexEntrySize];
	const uint64_t fields[] = {s->size,           i.packet_size_bits,   i.content_size_bits,
	                           i.timestamp_begin, i.timestamp_end,      i.events_discarded,
	                           i.stream_class_id, i.stream_instance_id, i.packet_seq_num};
	static_assert(sizeof fields == kIndexEntrySize);
	for (size_t k = 0; k < 9; k++)
		put_be64(entry + 8 * k, fields[k]);
	if (const int err = write_all_at(s->index.get(), entry, sizeof entry, s->index_size)) {
		errno = err;
		why = failed(cat(trace_path, "/index/", s->file, ".idx"), "write");
		// Neither the entry nor its packet stays: both may come again.
		[[maybe_unused]] const int rc = ::ftruncate(s->index.get(), static_cast<off_t>(s->index_size));
		[[maybe_unused]] const int rd = ::ftruncate(s->data.get(), static_cast<off_t>(s->size));
		return why;
	}
	last_packet_offset_ = s->size;
	s->size += m.bytes.size();
	s->index_size += kIndexEntrySize;
	++packets_;
	return {};
}

std::string SessionWriter::archive(const cr::ArchiveTrace &m)
{
	if (live_)
		return "ARCHIVE_TRACE in a live session (its viewers read the files it would move)";
	const auto it = traces_.find(m.trace_id);
	if (it == traces_.end())
		return cat("ARCHIVE_TRACE of unknown trace ", std::to_string(m.trace_id));
	const std::string path = it->second.path;
	std::vector<uint32_t> streams;
	for (const auto &[id, st] : streams_) {
		if (st.trace_id != m.trace_id)
			continue;
		if (!st.closed)
			return cat("ARCHIVE_TRACE of trace ", path, " whose stream ", st.file, " is open");
		streams.push_back(id);
	}
	if (archived_traces_.size() + archived_streams_.size() + streams.size() >= kMaxArchivedIds)
		return "more than 1048576 traces and streams archived in a session";
	// SESSION/PATH becomes SESSION/archives/ARCHIVE/LEAF.
	const std::string leaf = path.substr(path.rfind('/') + 1);
	const std::string dest = cat("archives/", m.archive);
	base::Fd archives(make_dir(session_dir_->get(), "archives", false));
	if (!archives)
		return failed("archives", "mkdir");
	base::Fd chunk(make_dir(archives.get(), m.archive, false));
	if (!chunk)
		return failed(dest, "mkdir");
	if (::renameat2(session_dir_->get(), path.c_str(), chunk.get(), leaf.c_str(), RENAME_NOREPLACE) != 0) {
		if (errno == EEXIST)
			return cat("ARCHIVE_TRACE of trace ", path, ": ", dest, "/", leaf, " exists already");
		return failed(cat(path, " to ", dest, "/", leaf), "rename");
	}
	// The chunk's directory (the path's parents), empty once its traces moved, goes.
	for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
	     slash = path.rfind('/', slash - 1))
		if (::unlinkat(session_dir_->get(), path.substr(0, slash).c_str(), AT_REMOVEDIR) != 0)
			break; // another trace of the chunk is still there
	for (const uint32_t id : streams) {
		streams_.erase(id);
		archived_streams_.insert(id);
	}
	traces_.erase(it);
	archived_traces_.insert(m.trace_id);
	return {};
}

std::string SessionWriter::stream_files(const cr::StreamFiles &m)
{
	std::string why;
	StreamState *s = open_stream(m.stream_id, "STREAM_FILES", why);
	if (!s)
		return why;
	if (live_)
		return "STREAM_FILES in a live session (its viewers read each stream from one file)";
	if (s->file_size || s->size > 0)
		return cat("STREAM_FILES of stream ", s->file, " after ", s->file_size ? "another" : "a packet");
	// FILE (and its index) becomes FILE_0, the first of the ring.
	const TraceState &t = traces_.at(s->trace_id);
	const std::string first = cat(s->file, "_0");
	base::Fd index_dir(open_index_dir(t.dir.get()));
	if (!index_dir)
		return failed(cat(t.path, "/index"), "open");
	if (::renameat2(t.dir.get(), s->file.c_str(), t.dir.get(), first.c_str(), RENAME_NOREPLACE) != 0)
		return failed(cat(t.path, "/", first), "rename");
	if (::renameat2(index_dir.get(), cat(s->file, ".idx").c_str(), index_dir.get(), cat(first, ".idx").c_str(),
	                RENAME_NOREPLACE) != 0) {
		why = failed(cat(t.path, "/index/", first, ".idx"), "rename");
		::renameat(t.dir.get(), first.c_str(), t.dir.get(), s->file.c_str()); // as it was: it may come again
		return why;
	}
	s->file_size = m.size;
	s->file_count = m.count;
	s->kept = {0};
	return {};
}

std::string SessionWriter::next_file(StreamState &s)
{
	const TraceState &t = traces_.at(s.trace_id);
	const uint64_t n = s.file_index + 1;
	const std::string name = cat(s.file, "_", std::to_string(n));
	base::Fd index_dir(open_index_dir(t.dir.get()));
	if (!index_dir)
		return failed(cat(t.path, "/index"), "open");
	base::Fd data(create_file(t.dir.get(), name));
	if (!data)
		return failed(cat(t.path, "/", name), "create");
	base::Fd index(create_file(index_dir.get(), cat(name, ".idx")));
	const int err = index ? write_index_header(index.get()) : errno;
	if (!index || err) {
		errno = err;
		std::string why = failed(cat(t.path, "/index/", name, ".idx"), index ? "write" : "create");
		// What this packet made goes: it may come again.
		::unlinkat(t.dir.get(), name.c_str(), 0);
		if (index)
			::unlinkat(index_dir.get(), cat(name, ".idx").c_str(), 0);
		return why;
	}
	// The oldest file beyond the count goes, with its index.
	while (s.file_count && s.kept.size() >= s.file_count) {
		const std::string old = cat(s.file, "_", std::to_string(s.kept.front()));
		::unlinkat(t.dir.get(), old.c_str(), 0);
		::unlinkat(index_dir.get(), cat(old, ".idx").c_str(), 0);
		s.kept.pop_front();
	}
	s.data = std::move(data);
	s.index = std::move(index);
	s.size = 0;
	s.index_size = kIndexHeaderSize;
	s.file_index = n;
	if (s.file_count)
		s.kept.push_back(n);
	return {};
}

} // namespace tracery::relay
