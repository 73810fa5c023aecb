// A session's user trace: see user_trace.hpp.
#include "daemon/user_trace.hpp"

#include "base/fs_creds.hpp"
#include "daemon/log.hpp"

#include "event/schema.hpp"

#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <system_error>

namespace tracery::daemon {

using nlohmann::json;

namespace {

std::string host_name()
{
	char buf[256] = {};
	gethostname(buf, sizeof buf - 1);
	return buf;
}

ctf::TraceInfo trace_info(const SessionIdentity &session)
{
	ctf::TraceInfo info;
	info.uuid = session.uuid;
	info.hostname = host_name();
	info.clock_scale = session.clock_scale;
	info.env.push_back({"tracer_session", session.name});
	return info;
}

} // namespace

UserTrace::UserTrace(const SessionIdentity &session)
	: session_(session), local_dir_(session.output), info_(trace_info(session))
{
}

consumer::TraceOutput &UserTrace::output()
{
	if (!output_)
		output_.emplace(local_dir_, session_.relay.link, "ust");
	return *output_;
}

void UserTrace::set_local_dir(std::string dir)
{
	// A failed first start may have made the output (its buffers, dropped
	// since): same relay trace, the local directory of this layout.
	if (output_)
		output_->set_local_dir(dir);
	local_dir_ = std::move(dir);
}

void UserTrace::continue_in(std::string dir)
{
	if (!metadata_written_)
		return set_local_dir(session_.local() ? std::move(dir) : "");
	output().continue_in(dir);
	if (session_.local())
		local_dir_ = std::move(dir);
}

void UserTrace::go_back(std::string dir)
{
	if (!metadata_written_)
		return set_local_dir(session_.local() ? std::move(dir) : "");
	if (session_.local())
		local_dir_ = std::move(dir);
	output().go_back();
}

void UserTrace::write_metadata(const std::vector<std::unique_ptr<Channel>> &channels,
                               const std::vector<ctf::EnvEntry> &tracked)
{
	if (metadata_written_)
		return;
	ctf::TraceInfo info = info_;
	info.env.insert(info.env.end(), tracked.begin(), tracked.end());
	std::string text = ctf::MetadataWriter(std::move(info)).preamble();
	for (const auto &c : channels)
		text += ctf::MetadataWriter::stream_class(c->index(), c->spec().context);
	text += held_; // event classes given before
	if (session_.snapshot) {
		held_ = std::move(text);
	} else {
		base::FsCreds as_owner(session_.owner, session_.owner_gid);
		try {
			output().create_local();
			output().write_metadata(text);
		} catch (const std::system_error &e) {
			throw std::runtime_error("cannot write the trace metadata in '" + session_.output +
			                         "': " + strerror(e.code().value()) +
			                         "; free some space or create the session with another --output");
		}
		held_.clear();
	}
	metadata_written_ = true;
}

std::map<std::string, uint32_t> UserTrace::ids_for(Channel &ch, const std::map<std::string, json> &events)
{
	std::map<std::string, uint32_t> ids;
	std::string blocks;
	for (const auto &[key, schema] : events) {
		if (!ch.enabled(event::full_name(schema)))
			continue;
		if (!ch.ids().count(key)) {
			try {
				event::OwnedEventDesc desc(schema);
				blocks += ctf::MetadataWriter::event_class(
					ch.index(), static_cast<uint32_t>(ch.ids().size()), desc.desc());
			} catch (const std::exception &e) {
				log(Level::warn, "session %s: event %s is not traced: %s", session_.name.c_str(),
				    key.c_str(), e.what());
				continue;
			}
		}
		ids[key] = ch.id_for(key);
	}
	if (blocks.empty())
		return ids;
	if (!metadata_written_ || session_.snapshot) {
		held_ += blocks;
		return ids;
	}
	base::FsCreds as_owner(session_.owner, session_.owner_gid);
	try {
		output().append_metadata(blocks);
	} catch (const std::exception &e) {
		log(Level::error, "session %s: cannot append to the metadata of %s: %s", session_.name.c_str(),
		    session_.output.c_str(), e.what());
	}
	return ids;
}

} // namespace tracery::daemon
