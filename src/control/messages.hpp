// control/messages.hpp — every message of the control protocol, named once.
//
// Two conversations run over the daemon's socket (framing: wire.hpp); the
// kind in every frame's header says which (control::Kind).
//
// The tracery command's: one request, one reply, then the connection closes.
//   request  {"cmd": <a Command below>, ...its arguments}
//   reply    {"ok": true, ...results} or {"ok": false, "error": "<one line naming the fix>"}
//
// A traced program's: it opens with a hello and keeps the connection for as
// long as it runs; each side sends messages whose "type" is one below.
//   program -> daemon  hello       {procname, events: [schema...]}
//                      new_events  {req, events: [schema...]}   (a library loaded later)
//                      ack         {seq, session, tracing, refused: [{event, reason}]}
//   daemon -> program  ready       {}                            (registration complete)
//                      start_session {session, name, seq, channels: [...]} + the buffers' memfds
//                                    (one per channel, in order, but for a channel marked
//                                    "buffer": false: it does not trace this program)
//                      update      {session, seq, channels}      (ids and filters changed)
//                      ids         {req, sessions: [{session, channels}]}  (answers new_events)
//                      stop_session {session, seq}
// Event schemas are event/schema.hpp's JSON form.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tracery::control {

// Keys that say what a message is.
inline constexpr char kCmdKey[] = "cmd";   // a command request
inline constexpr char kTypeKey[] = "type"; // a message between the daemon and a program

// Values of "cmd": the tracery command's requests.
namespace cmd {
inline constexpr char kCreate[] = "create";
inline constexpr char kDestroy[] = "destroy";
inline constexpr char kEnableChannel[] = "enable-channel";
inline constexpr char kEnableEvent[] = "enable-event";
inline constexpr char kDisableEvent[] = "disable-event";
inline constexpr char kAddContext[] = "add-context";
inline constexpr char kStart[] = "start";
inline constexpr char kStop[] = "stop";
inline constexpr char kStatus[] = "status";
inline constexpr char kList[] = "list";
inline constexpr char kListEvents[] = "list-events";
inline constexpr char kSnapshotRecord[] = "snapshot-record";
// The kernel domain (-k): its own requests, which a daemon without it
// refuses as unknown instead of taking them for user space ones.
inline constexpr char kKernelEnableEvent[] = "kernel-enable-event";
inline constexpr char kKernelDisableEvent[] = "kernel-disable-event";
inline constexpr char kKernelEnableChannel[] = "kernel-enable-channel";
inline constexpr char kKernelTrack[] = "kernel-track";
inline constexpr char kKernelUntrack[] = "kernel-untrack";
inline constexpr char kKernelList[] = "kernel-list";
} // namespace cmd

// Values of "type": the messages between the daemon and a traced program.
namespace msg {
inline constexpr char kHello[] = "hello";
inline constexpr char kNewEvents[] = "new_events";
inline constexpr char kAck[] = "ack";
inline constexpr char kReady[] = "ready";
inline constexpr char kStartSession[] = "start_session";
inline constexpr char kUpdate[] = "update";
inline constexpr char kIds[] = "ids";
inline constexpr char kStopSession[] = "stop_session";
} // namespace msg

// The string at `key` of a message body, or "" if there is none or it is not
// a string: what says which message a body is, read without throwing
// (json::value() throws when the field has another JSON type).
inline std::string string_field(const nlohmann::json &body, const char *key)
{
	const auto it = body.find(key);
	return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace tracery::control
