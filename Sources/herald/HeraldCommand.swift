import ArgumentParser
import HeraldServer

/// `herald`: runs the server (`herald serve`, the default), or prints a token (`herald token`).
@main
struct HeraldCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A real-time state server: change state over JSON HTTP, watch it change over Server-Sent Events.",
        version: HeraldVersion.current,
        subcommands: [HeraldServe.self, TokenCommand.self],
        defaultSubcommand: HeraldServe.self)
}
