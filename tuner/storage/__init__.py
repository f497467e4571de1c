"""Where studies live: the Optuna study in SQL (`study`), the database URL (`database_url`) and the
driver lease that lets one process drive a study at a time (`lease`), several study attributes
written in one transaction (`attrs`), and the confinement of paths read from a study to a root
(`confine`)."""
