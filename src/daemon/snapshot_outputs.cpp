// `snapshot add-output`, `del-output` and `list-output`: where a snapshot
// session's `snapshot record` writes (session_snapshot.hpp keeps them). Every
// error is one line naming the problem and the fix.
#include "daemon/daemon.hpp"

#include "daemon/log.hpp"

namespace tracery::daemon {

namespace {

template <class Reply>
Reply outputs_reply(const TraceSession &s)
{
	Reply r;
	r.session = s.name();
	r.outputs = s.snapshot_outputs().outputs();
	return r;
}

} // namespace

control::SnapshotAddOutputReply Daemon::cmd_snapshot_add_output(const control::SnapshotAddOutput &req,
                                                                const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req.session, peer);
	try {
		s.snapshot_outputs().add_output(req.output);
	} catch (const std::runtime_error &e) {
		throw CommandError(e.what());
	}
	log(Level::info, "session %s: snapshot output %s", s.name().c_str(), req.output.path.c_str());
	return outputs_reply<control::SnapshotAddOutputReply>(s);
}

control::SnapshotDelOutputReply Daemon::cmd_snapshot_del_output(const control::SnapshotDelOutput &req,
                                                                const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req.session, peer);
	try {
		s.snapshot_outputs().delete_output(req.output);
	} catch (const std::runtime_error &e) {
		throw CommandError(e.what());
	}
	return outputs_reply<control::SnapshotDelOutputReply>(s);
}

control::SnapshotListOutputReply Daemon::cmd_snapshot_list_output(const control::SnapshotListOutput &req,
                                                                  const control::PeerCred &peer, Lock &)
{
	return outputs_reply<control::SnapshotListOutputReply>(session_for(req.session, peer));
}

} // namespace tracery::daemon
