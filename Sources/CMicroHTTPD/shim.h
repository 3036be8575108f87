#ifndef HERALD_CMICROHTTPD_SHIM_H
#define HERALD_CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/* Swift cannot call MHD's variadic functions nor see some macros: these adapters make them callable. */

/// The settings `cmhd_start_daemon` passes to `MHD_start_daemon` as an option array.
typedef struct {
    unsigned int flags;
    const struct sockaddr *address;
    unsigned int connection_limit;
    size_t memory_limit;
    unsigned int connection_timeout;
    unsigned int listen_backlog;
    /// Called with the raw request target before libmicrohttpd parses it; returns the request's context.
    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *connection);
    /// Called for each accepted socket before it becomes a connection; MHD_NO closes it.
    MHD_AcceptPolicyCallback accept_policy;
    /// Called when a connection starts and when it is closed (before its socket is).
    MHD_NotifyConnectionCallback notify_connection;
} cmhd_daemon_settings;

static inline struct MHD_Daemon *cmhd_start_daemon(
    cmhd_daemon_settings settings,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls)
{
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_SOCK_ADDR, 0, (void *)settings.address },
        { MHD_OPTION_CONNECTION_LIMIT, (intptr_t)settings.connection_limit, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)settings.memory_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)settings.connection_timeout, NULL },
        { MHD_OPTION_LISTEN_BACKLOG_SIZE, (intptr_t)settings.listen_backlog, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls },
        { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)settings.uri_log, completed_cls },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)settings.notify_connection, completed_cls },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(settings.flags, 0, settings.accept_policy, completed_cls, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// The port the daemon listens on (useful after binding port 0), or 0.
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The listening socket, or -1.
static inline int cmhd_listen_fd(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_LISTEN_FD);
    return info == NULL ? -1 : info->listen_fd;
}

/// The connection's socket, or -1.
static inline int cmhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// Writes `address` as text (`127.0.0.1`, `::1`; an IPv4-mapped IPv6 address as IPv4) into `out`;
/// returns 0, or -1 for another family or a short buffer.
static inline int cmhd_format_address(const struct sockaddr *address, char *out, size_t size)
{
    if (address == NULL) return -1;
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)address;
        return inet_ntop(AF_INET, &v4->sin_addr, out, (socklen_t)size) == NULL ? -1 : 0;
    }
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)address;
        if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr))
            return inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], out, (socklen_t)size) == NULL ? -1 : 0;
        return inet_ntop(AF_INET6, &v6->sin6_addr, out, (socklen_t)size) == NULL ? -1 : 0;
    }
    return -1;
}

/// The connection's peer address as text (see `cmhd_format_address`); returns 0, or -1.
static inline int cmhd_client_address(struct MHD_Connection *connection, char *out, size_t size)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? -1 : cmhd_format_address(info->client_addr, out, size);
}

/// Ends the string libmicrohttpd is about to parse as query arguments. Herald reads the query from
/// the raw target itself; libmicrohttpd 0.9.75 would store one record per argument in the
/// connection's memory pool and hang the connection when they no longer fit (connection.c:3035,
/// connection_add_header). `uri` points into libmicrohttpd's own writable read buffer, which it
/// modifies in place the same way (connection.c:3034, `args[0] = '\0'`).
static inline void cmhd_drop_query_arguments(const char *uri)
{
    char *question = strchr((char *)uri, '?');
    if (question != NULL) question[1] = '\0';
}

/// Walks a request's head as libmicrohttpd holds it: its read buffer, in which each line's CR LF (or
/// LF) and each field's colon were overwritten with NUL in place (connection.c:2604, 3443), and which
/// holds every field as pointers into it, in the order they came (connection.c:395).
typedef struct {
    const char *begin;  // the request line's start (the method)
    const char *end;    // just past the empty line that ends the head
    const char *cursor; // where the previous field's value (at first, the version) ends
    int hidden;         // a field held a NUL, a CR, or a line of its own (folded)
} cmhd_head_scan;

/// Whether [from, to) lies in the head and holds `least` to `most` bytes, each NUL.
static inline int cmhd_nul_run(const cmhd_head_scan *scan, const char *from, const char *to, long least, long most)
{
    if (from < scan->begin || to > scan->end || to - from < least || to - from > most) return 0;
    for (const char *byte = from; byte < to; byte++) if (*byte != '\0') return 0;
    return 1;
}

static enum MHD_Result cmhd_scan_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    cmhd_head_scan *scan = cls;
    if (key == NULL || value == NULL) { scan->hidden = 1; return MHD_NO; }
    const char *key_end = key + strlen(key);
    const char *value_end = value + strlen(value);
    // Between the previous line's last byte and this name: that line's CR LF or LF, nothing more.
    int whole = cmhd_nul_run(scan, scan->cursor, key, 1, 2);
    // Between the name and the value: the colon, then spaces and tabs.
    if (whole && (key_end[0] != '\0' || value <= key_end || value > scan->end)) whole = 0;
    for (const char *byte = key_end + 1; whole && byte < value; byte++) if (*byte != ' ' && *byte != '\t') whole = 0;
    if (whole && strchr(value, '\r') != NULL) whole = 0;
    if (!whole) { scan->hidden = 1; return MHD_NO; }
    scan->cursor = value_end;
    return MHD_YES;
}

/// Whether a request's head held a field value that C strings would cut short (`Content-Length: 2\0NN`
/// is read as 2: RFC 9110 §5.5 says to refuse a NUL, CR or LF in a field value), or a field folded
/// over two lines (which libmicrohttpd joins without the space RFC 9112 §5.2 asks for). Each value
/// must end where its line ends: at the NULs that replaced the line's CR LF, followed by the next
/// name or, after the last, by the empty line. Call from the first access-handler call, with the
/// `method` and `version` libmicrohttpd passed to it (pointers into the same buffer).
static inline int cmhd_head_hides_bytes(struct MHD_Connection *connection, const char *method, const char *version)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (info == NULL || method == NULL || version == NULL) return 1;
    cmhd_head_scan scan = { method, method + info->header_size, NULL, 0 };
    if (version < scan.begin || version > scan.end) return 1;
    scan.cursor = version + strlen(version);
    MHD_get_connection_values(connection, MHD_HEADER_KIND, cmhd_scan_field, &scan);
    // After the last field (or the request line), its line's end and the empty line: 2 to 4 NULs.
    return scan.hidden || !cmhd_nul_run(&scan, scan.cursor, scan.end, 2, 4);
}

#endif
