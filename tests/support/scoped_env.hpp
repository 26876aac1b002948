// An environment variable set (or unset) for one scope, and put back as it was after it.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace covenant_test {

class scoped_env {
 public:
  /// `value` null: the variable is unset for the scope.
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~scoped_env() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace covenant_test
