// Errors as values. Expected failures (bad input, an unreachable hypervisor, a
// guest that lies) travel as Result<T>; exceptions thrown by libraries are
// caught at the seam that calls them and turned into an Error there.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ds {

// Stable, machine-readable error codes. The API maps them to HTTP statuses in
// exactly one place (http_status_for in daemon/api/api.cpp, used by its
// error_response); append only, never rename.
namespace errc {
inline constexpr const char* kInvalidSpec = "invalid_spec";
inline constexpr const char* kInvalidArgument = "invalid_argument";
inline constexpr const char* kNotFound = "not_found";
inline constexpr const char* kConflict = "conflict";
inline constexpr const char* kHypervisor = "hypervisor";
inline constexpr const char* kStorage = "storage";
inline constexpr const char* kAgent = "agent";
inline constexpr const char* kProtocol = "protocol";
inline constexpr const char* kTimeout = "timeout";
inline constexpr const char* kSettingsMismatch = "settings_mismatch";
inline constexpr const char* kCancelled = "cancelled";
inline constexpr const char* kIo = "io";
inline constexpr const char* kUnavailable = "unavailable";
inline constexpr const char* kInternal = "internal";
// The backend cannot do this at all (not a failure of this call).
inline constexpr const char* kUnsupported = "unsupported";
// A sweep names a hypervisor or storage this daemon does not have configured.
inline constexpr const char* kNotConfigured = "not_configured";
// Refused for lack of permission: our API's peer is neither root nor in the
// API group, or a hypervisor's API (PVE's 403) refused our token.
inline constexpr const char* kForbidden = "forbidden";
}  // namespace errc

struct Error {
    std::string code;     // one of errc::*
    std::string message;  // for humans: says what is wrong and where
};

inline Error make_error(std::string code, std::string message) {
    return Error{std::move(code), std::move(message)};
}

template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : state_(std::move(value)) {}
    Result(Error error) : state_(std::move(error)) {}

    bool ok() const { return std::holds_alternative<T>(state_); }
    explicit operator bool() const { return ok(); }

    T& value() & {
        assert(ok());
        return std::get<T>(state_);
    }
    const T& value() const& {
        assert(ok());
        return std::get<T>(state_);
    }
    T&& value() && {
        assert(ok());
        return std::get<T>(std::move(state_));
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const {
        assert(!ok());
        return std::get<Error>(state_);
    }

  private:
    std::variant<T, Error> state_;
};

// Result of an operation with no value.
template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), failed_(true) {}

    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const Error& error() const {
        assert(failed_);
        return error_;
    }

  private:
    Error error_;
    bool failed_ = false;
};

using Status = Result<void>;

inline Status ok_status() {
    return Status();
}

}  // namespace ds

// Early return on failure: DS_TRY(status_expr); inside a function returning
// any Result<U>.
#define DS_TRY(expr)                                             \
    do {                                                         \
        auto&& ds_try_result_ = (expr);                          \
        if (!ds_try_result_.ok()) return ds_try_result_.error(); \
    } while (0)

// Early return on failure, else the value: DS_ASSIGN_OR_RETURN(auto x, f());
// declares x from f()'s value, or returns f()'s error from the enclosing
// function (which returns any Result<U>). `lhs` may also be an existing
// variable. Expands to several statements: not for an unbraced if/else.
// Variadic so that an expression with a bare comma (a template's arguments)
// passes whole.
#define DS_ASSIGN_OR_RETURN(lhs, ...) \
    DS_ASSIGN_OR_RETURN_IMPL_(DS_RESULT_CONCAT_(ds_assign_result_, __LINE__), lhs, __VA_ARGS__)
#define DS_ASSIGN_OR_RETURN_IMPL_(result, lhs, ...) \
    auto result = (__VA_ARGS__);                    \
    if (!result.ok()) return result.error();        \
    lhs = std::move(result).value()
#define DS_RESULT_CONCAT_(a, b) DS_RESULT_CONCAT_INNER_(a, b)
#define DS_RESULT_CONCAT_INNER_(a, b) a##b
