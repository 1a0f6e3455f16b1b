//===- parallel.h - Independent work items on a thread pool -----*- C++ -*-===//
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

namespace aotc {

/// Runs f(0) .. f(n - 1), independent of each other, on `jobs` threads
/// (Boost.Asio's pool; inline when jobs <= 1 or n <= 1).  Each f(i) writes
/// only its own results, so the outcome does not depend on `jobs`; if some
/// throw, the exception of the lowest i is rethrown, as a serial loop would.
inline void parallelFor(size_t n, unsigned jobs, const std::function<void(size_t)>& f) {
  if (jobs <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  {
    boost::asio::thread_pool pool(jobs);
    for (size_t i = 0; i < n; ++i)
      boost::asio::post(pool, [&, i] {
        try {
          f(i);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    pool.join();
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace aotc
