// kjit::test::free_loopback_port: a TCP port on 127.0.0.1 that nothing listens on now, for a
// server a test starts (nginx, slurmctld): the server binds it a moment later, so a start that
// loses the race is retried on another. Throws std::runtime_error when no socket can be bound.
#pragma once

namespace kjit::test {

int free_loopback_port();

}  // namespace kjit::test
