// encode() and decode() of every message between the daemon and a traced
// program (messages.hpp), and of ErrorReply (both conversations end with
// it), compiled here once for the daemon, libtracery and the tests. A
// message missing here is a link error where it is sent or read.
#include "control/codec_impl.hpp"
#include "control/messages.hpp"

namespace tracery::control {

TRACERY_MESSAGE_CODEC(ErrorReply)
TRACERY_MESSAGE_CODEC(Hello)
TRACERY_MESSAGE_CODEC(NewEvents)
TRACERY_MESSAGE_CODEC(Ack)
TRACERY_MESSAGE_CODEC(Ready)
TRACERY_MESSAGE_CODEC(StartSession)
TRACERY_MESSAGE_CODEC(Update)
TRACERY_MESSAGE_CODEC(Ids)
TRACERY_MESSAGE_CODEC(StopSession)

} // namespace tracery::control
