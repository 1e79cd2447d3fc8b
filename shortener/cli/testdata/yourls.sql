-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)
--
-- Host: localhost    Database: yourls
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET NAMES utf8mb4 */;

DROP TABLE IF EXISTS `yourls_url`;
CREATE TABLE `yourls_url` (
  `keyword` varchar(100) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  `url` text COLLATE utf8mb4_bin NOT NULL,
  `title` text CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci,
  `timestamp` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `ip` varchar(41) COLLATE utf8mb4_bin NOT NULL,
  `clicks` int unsigned NOT NULL,
  PRIMARY KEY (`keyword`),
  KEY `ip` (`ip`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

LOCK TABLES `yourls_url` WRITE;
/*!40000 ALTER TABLE `yourls_url` DISABLE KEYS */;
INSERT INTO `yourls_url` VALUES ('ozh','https://ozh.org/','Ozh\'s blog; \"quoted\"','2024-01-15 10:30:00','192.0.2.10',42),('yourls','https://yourls.org/','YOURLS: Your Own URL Shortener','2024-02-01 08:00:00','2001:db8::1',7),('no-title','https://example.com/a?b=c&d=e',NULL,'2024-03-03 03:03:03','192.0.2.11',0);
INSERT INTO `yourls_url` VALUES ('js','javascript:alert(1)','bad','2024-03-04 00:00:00','192.0.2.12',1);
/*!40000 ALTER TABLE `yourls_url` ENABLE KEYS */;
UNLOCK TABLES;

DROP TABLE IF EXISTS `yourls_log`;
INSERT INTO `yourls_log` VALUES (1,'2024-01-15 10:31:00','ozh','https://news.example/','Mozilla/5.0','192.0.2.99','US');
INSERT INTO `yourls_url` (`keyword`, `url`, `title`, `timestamp`, `ip`, `clicks`) VALUES ('multi','https://example.com/multi\nline','Two\r\nlines','2024-04-01 12:00:00','192.0.2.13',3);
