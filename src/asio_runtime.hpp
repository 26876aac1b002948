// Internal: the Boost.Asio side of covenant::runtime, for engines built on its I/O loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "covenant/runtime.hpp"

namespace covenant::detail {

using io_strand = boost::asio::strand<boost::asio::io_context::executor_type>;

struct runtime_access {
  /// The strand every I/O-loop callback of `rt` runs on (post_io, timers): handlers bound to it
  /// never run concurrently, even when the application runs its io_context on several threads.
  static io_strand& strand(runtime& rt) noexcept;
};

}  // namespace covenant::detail
