import HeraldHTTP
import HTTPTypes

extension Routes {
    /// The live page at `/`: HTML, script and style, embedded in the binary.
    mutating func addPage() {
        let files = [
            ("/", PageFile(PackageResources.index_html, contentType: "text/html; charset=utf-8")),
            ("/app.js", PageFile(PackageResources.app_js, contentType: "text/javascript; charset=utf-8")),
            // The browser module, for any page on any origin (CORS lets it load): one stream per browser.
            ("/herald.js", PageFile(PackageResources.herald_js, contentType: "text/javascript; charset=utf-8")),
            ("/herald.d.ts", PageFile(PackageResources.herald_d_ts, contentType: "application/typescript; charset=utf-8")),
            ("/app.css", PageFile(PackageResources.app_css, contentType: "text/css; charset=utf-8")),
            ("/favicon.svg", PageFile(PackageResources.favicon_svg, contentType: "image/svg+xml")),
            // Browsers ask for this one on their own; an SVG there is shown by every current browser.
            ("/favicon.ico", PageFile(PackageResources.favicon_svg, contentType: "image/svg+xml")),
            // The API's description, with the same validator (a page's policy does not hurt a YAML file).
            ("/openapi.yaml", PageFile(PackageResources.openapi_yaml, contentType: "application/yaml")),
        ]
        for (path, file) in files {
            add(.get, path) { request in file.response(to: request) }
        }
    }
}
