-- The Olio-shaped schema of the CloudStone test application.
CREATE DATABASE IF NOT EXISTS olio;
USE olio;
CREATE TABLE persons (
  id INT AUTO_INCREMENT PRIMARY KEY,
  username VARCHAR(64) NOT NULL UNIQUE,
  password VARCHAR(64) NOT NULL,
  first_name VARCHAR(64), last_name VARCHAR(64), email VARCHAR(128),
  city VARCHAR(64), summary TEXT, image INT NOT NULL DEFAULT 1
) ENGINE=InnoDB;
CREATE TABLE events (
  id INT AUTO_INCREMENT PRIMARY KEY,
  title VARCHAR(128) NOT NULL, description TEXT, event_date DATE NOT NULL,
  submitter_id INT NOT NULL, address VARCHAR(255), image INT NOT NULL DEFAULT 1,
  created DATETIME NOT NULL,
  KEY by_date (event_date), KEY by_submitter (submitter_id)
) ENGINE=InnoDB;
CREATE TABLE tags (
  id INT AUTO_INCREMENT PRIMARY KEY,
  tag VARCHAR(64) NOT NULL UNIQUE
) ENGINE=InnoDB;
CREATE TABLE event_tags (
  event_id INT NOT NULL, tag_id INT NOT NULL,
  PRIMARY KEY (event_id, tag_id), KEY by_tag (tag_id)
) ENGINE=InnoDB;
CREATE TABLE comments (
  id INT AUTO_INCREMENT PRIMARY KEY,
  event_id INT NOT NULL, person_id INT NOT NULL, body TEXT, rating INT, created DATETIME,
  KEY by_event (event_id)
) ENGINE=InnoDB;
CREATE TABLE attendance (
  event_id INT NOT NULL, person_id INT NOT NULL,
  PRIMARY KEY (event_id, person_id), KEY by_person (person_id)
) ENGINE=InnoDB;
CREATE USER IF NOT EXISTS 'olio'@'localhost' IDENTIFIED BY 'olio';
GRANT ALL ON olio.* TO 'olio'@'localhost';
