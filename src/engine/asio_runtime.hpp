// Internal: the Boost.Asio side of covenant::runtime, for engines built on its I/O loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <functional>

#include "covenant/engine/runtime.hpp"

namespace covenant::detail {

using io_strand = boost::asio::strand<boost::asio::io_context::executor_type>;

struct runtime_access {
  /// The strand every I/O-loop callback of `rt` runs on (post_io, timers): handlers bound to it
  /// never run concurrently, even when the application runs its io_context on several threads.
  static io_strand& strand(runtime& rt) noexcept;
  /// Posts to `rt`'s workers through a handle that keeps the queue alive: a late event of a call
  /// that already ended (a timer, an engine callback racing the end) may still be posting while
  /// the runtime is being destroyed; once the workers have stopped, such work runs on the caller.
  static std::function<void(std::function<void()>)> poster(runtime& rt);
};

}  // namespace covenant::detail
