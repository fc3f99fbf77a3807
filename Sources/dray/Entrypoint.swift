import DrayCLI
import Foundation

exit(DrayCommandLine.main(Array(CommandLine.arguments.dropFirst())))
