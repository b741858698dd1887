// Where project/plugins.sbt's PlayPlugin comes from: labs/sbt/plugin, shared by every lab.
Compile / unmanagedSourceDirectories += baseDirectory.value / ".." / ".." / ".." / "sbt" / "plugin"
