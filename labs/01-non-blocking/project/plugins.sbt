// The Play line's sbt plugin (labs/sbt/plugin/PlayPlugin.scala; PUL_PLAY chooses), and the build
// code every lab shares (labs/sbt/build): the Play line, the instruments module.
addSbtPlugin(PlayPlugin.module)
Compile / unmanagedSourceDirectories += baseDirectory.value / ".." / ".." / "sbt" / "build"
