package work

import javax.inject.Provider
import play.api.inject.{Binding, Module}
import play.api.{Configuration, Environment}

import scala.jdk.CollectionConverters._

/**
 * Play's two JDBC modules (conf/application.conf disables them), installed only when
 * the configuration names a database. Play's build the connection pool while the
 * application starts, and without a URL HikariCP refuses ("jdbcUrl is required") and
 * the start fails; this lab's endpoints that need no database must work without one.
 */
class OptionalDatabaseModule extends Module {
  def bindings(environment: Environment, configuration: Configuration): Seq[Binding[_]] =
    if (SleepQuery.configured(configuration.underlying))
      (new play.api.db.DBModule().bindings(environment, configuration) ++
        new play.db.DBModule().bindings(environment.asJava, configuration.underlying).asScala.map(_.asScala)).toSeq
    else
      // Nothing asks for it then (SleepQuery checks first); the message says why if anything does.
      Seq(bind[play.db.Database].to(new Provider[play.db.Database] {
        def get(): play.db.Database = throw DatabaseUnavailable.notConfigured()
      }))
}
