module barrage-h2c-upload

go 1.26.8
