import HeraldHTTP

/// Adds `Access-Control-Allow-Origin` to every answer and answers preflight `OPTIONS` requests.
struct CORS: Sendable {
    let origin: String
    let router: Router

    func respond(to request: Request) -> Response {
        var response: Response
        if request.method == "OPTIONS" {
            let methods = router.methods(for: request.path)
            if methods.isEmpty {
                response = Problem(status: 404, detail: "no resource at \(request.path)").response
            } else {
                let allowed = Array(Set(methods + ["OPTIONS"] + (methods.contains("GET") ? ["HEAD"] : []))).sorted().joined(separator: ", ")
                response = .empty(status: 204, headers: [
                    ("Allow", allowed), ("Access-Control-Allow-Methods", allowed),
                    ("Access-Control-Allow-Headers", request.header("Access-Control-Request-Headers") ?? "Content-Type, Last-Event-ID"),
                    ("Access-Control-Max-Age", "600"),
                ])
            }
        } else {
            response = router.respond(to: request)
        }
        response.headers.append(("Access-Control-Allow-Origin", origin))
        if origin != "*" { response.headers.append(("Vary", "Origin")) }
        return response
    }
}
